// What a PyTorch memory snapshot says about the allocator itself, beside the trace of
// requests: its settings, the segments and blocks it held when the recording began and
// when the snapshot was taken, and every segment it reserved or released in between.
// allocsim replay-check rebuilds the start, replays the trace and compares the rest.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sim/trace.hpp"

namespace allocsim {

// torch.cuda.memory._snapshot()["allocator_settings"] (PyTorch's defaults when absent).
struct TorchAllocatorSettings {
  bool recorded = false;                // the snapshot carried them (newer PyTorch)
  std::optional<Bytes> max_split_size;  // none: unlimited
  double garbage_collection_threshold = 0;
  bool expandable_segments = false;
  // roundup_power2_divisions by interval start in MB (1, 2, 4, ...), as recorded.
  std::vector<std::pair<std::uint64_t, std::uint64_t>> roundup_power2_divisions;
  std::string conf;  // PYTORCH_CUDA_ALLOC_CONF as the program set it
};

struct RecordedBlock {
  Addr addr;
  Bytes size;  // the block's size: rounded, with any unsplit slack
  bool allocated;
};

struct RecordedSegment {
  Addr addr;
  Bytes size;
  Stream stream;  // renumbered as in the trace
  bool small;     // the small pool's (2 MiB) or the large pool's
  bool expandable;
  std::vector<RecordedBlock> blocks;  // address order; empty for segments at the start
};

struct RecordedSegmentEvent {
  enum class Action : std::uint8_t { alloc, free, map, unmap };
  Action action;
  Addr addr;
  Bytes size;
  Stream stream;
  std::size_t during_event;  // the trace event whose replay made it
};

// A request PyTorch could not serve (an `oom` entry): it is not in the trace; it came
// before trace event `before_event`, after the cache releases its malloc made.
struct RecordedOom {
  Bytes size;         // rounded, as PyTorch records it
  Bytes device_free;  // what cudaMemGetInfo said was free when it gave up
  Stream stream;
  std::size_t before_event;
};

// A block allocated before the recording began: the trace's leading allocs, in order.
struct PreexistingBlock {
  Addr addr;
  Bytes requested;
  Stream stream;
  std::optional<Bytes> block_size;  // known when it is still live at the snapshot
};

// A pool other than the default (0, 0): a CUDA graph's or a MemPool's.
struct PrivatePool {
  std::string pool;   // "(1, 2)"
  std::string entry;  // the first snapshot entry naming it: "segments[3]", "device_traces[0][812]"
};

struct TorchRecording {
  Trace trace;
  int device = 0;      // the CUDA device whose trace this is
  std::string format;  // which PyTorch wrote it, as far as its keys tell
  std::vector<Addr> addresses;  // where PyTorch placed each alloc of `trace`, in order
  TorchAllocatorSettings settings;
  std::vector<PreexistingBlock> preexisting;  // trace.events[i] allocates preexisting[i]
  std::vector<RecordedSegment> segments_at_start;
  std::vector<RecordedSegment> segments_at_end;
  std::vector<RecordedSegmentEvent> segment_events;
  std::vector<PrivatePool> private_pools;
  std::vector<RecordedOom> ooms;
  // Each allocation's layer (layer_of_frames: "model.py:42 forward", "autograd backward"),
  // where the snapshot recorded frames: `frames` the distinct ones, `alloc_frames` one per
  // allocation of `trace`, an index or -1 (both empty without frames). They become the
  // trace's layers (an allocation without one is kNoFrame).
  std::vector<std::string> frames;
  std::vector<std::int64_t> alloc_frames;
  static constexpr std::string_view kNoFrame = "(no frame of the program)";
};

// Reads a snapshot's pickle (plain data only: decode_pickle), or the same dict saved as JSON
// (decode_snapshot_json), into a recording (read_snapshot_recording: workloads/snapshot_conversion.hpp);
// throws Error with a one-line reason naming the file and the snapshot's entry.
// `cuda_device`: whose trace (none: the only device with one; several: an error listing them).
TorchRecording read_torch_recording(const std::filesystem::path& pickle, std::optional<int> cuda_device = {});

// The same from the pickle's bytes in memory (pickle.dumps(snapshot) in Python, a file
// dropped on a web page); errors name `name`.
TorchRecording read_torch_recording_bytes(std::string_view pickle_bytes, const std::string& name,
                                          std::optional<int> cuda_device = {});

std::string_view to_string(RecordedSegmentEvent::Action action);

}  // namespace allocsim
