// async: CUDA's stream-ordered allocator (cudaMallocAsync / cudaFreeAsync on a memory
// pool), as the CUDA runtime documents its pool attributes (CUDA 11.2+ Programming Guide,
// "Stream Ordered Memory Allocator"; ../shared/reference/allocators.md section 3), and the
// two framework presets over it: torch-async (PyTorch's backend:cudaMallocAsync,
// c10/cuda/CUDAMallocAsyncAllocator.cpp, section 2.14) and tf-async (TensorFlow's
// TF_GPU_ALLOCATOR=cuda_malloc_async, GpuCudaMallocAsyncAllocator, section 3).
// - one pool per device; when no free range fits, the pool grows by one chunk of the
//   request rounded up to `granularity` (2 MiB: the VMM allocation granularity of current
//   GPUs, the least the driver can map; CUDA does not document its chunking, so it is a
//   parameter), and carves blocks of 256-B multiples from chunks, best fit, lowest address;
// - a free goes back to the pool tagged with its stream and its place in the order of
//   frees; a later request on the same stream may reuse it at once, one on another stream
//   only by a reuse rule, tried in this order: follow_event_dependencies (its stream waited,
//   through a `wait` sync, for the freeing stream after the free); a host sync covering the
//   free (the Programming Guide: with opportunistic reuse off "the allocator will still
//   reuse memory made available when a stream is synchronized with the CPU");
//   opportunistic (the free has completed on the GPU: the simulator has no GPU clock, so a
//   free counts as completed `completion_ns` of simulated time after it was made: 0, the
//   GPU keeping up with the host, by default); internal_dependencies (any free, the driver
//   inserting a wait: the allocating stream then depends on the freeing one);
// - at every host synchronisation (device, stream, event) the pool releases wholly free
//   chunks whose frees have completed, highest address first, while it holds more than
//   release_threshold (CUDA's default 0: everything unused goes back); cudaMemPoolTrimTo is
//   release_cached (empty_cache), which synchronises the device and trims to `trim_to`.
// Versions: the pool attributes as CUDA 12 documents them; PyTorch's backend at commit
// 03459473 (threshold UINT64_MAX, the three reuse attributes set, emptyCache = sync all
// streams + cudaMemPoolTrimTo(0), no retry on OOM); TensorFlow's allocator as in TF 2.x
// (threshold = pool size, TF_DETERMINISTIC_ALLOCATOR, the preallocation), its sync and
// retry once on OOM from XLA's newer gpu_cudamallocasync_allocator.cc.
// Deviations: PyTorch frees a block used on several streams (record_stream) on a unifying
// stream after event waits; a trace carries no record_stream, so a block is freed on the
// stream it was allocated on. The driver's real placement and chunk sizes are unknown
// (allocations may sit at other offsets); chunks never merge (each is one device
// allocation, not VMM pages in one range), so a request larger than every chunk's free
// range grows the pool even when neighbouring chunks are free: reserved bytes are an upper
// bound on the driver's. A trace without syncs never trims
// until release_cached or the end: real programs synchronise (loss.item(), a step's end),
// so replay a trace with its syncs where the recording has them.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "policies/common/address_ranges.hpp"
#include "policies/common/memory_cap.hpp"
#include "policies/common/size_bins.hpp"
#include "policies/common/slots.hpp"
#include "sim/device.hpp"
#include "sim/policy.hpp"
#include "sim/spec.hpp"

namespace allocsim {

enum class OomSync : std::uint8_t { none, stream, device };

// One parameter table, three sets of defaults: the raw pool and the two framework presets.
constexpr std::array<ParamInfo, 12> async_params(std::string_view threshold, std::string_view reuse_extra,
                                                  std::string_view oom_sync, std::string_view one_stream) {
  return {{
      {"granularity", ParamKind::bytes, "2MiB",
       "a new chunk is the request rounded up to this (CUDA leaves it undocumented)"},
      {"release_threshold", ParamKind::text, threshold,
       "cudaMemPoolAttrReleaseThreshold: bytes kept at a sync; max = never trim; "
       "tf = TensorFlow's memory limit (free memory minus MinSystemMemory)"},
      {"follow_event_dependencies", ParamKind::boolean, "true",
       "cudaMemPoolReuseFollowEventDependencies: reuse another stream's free "
       "once this stream waited for it"},
      {"opportunistic", ParamKind::boolean, reuse_extra,
       "cudaMemPoolReuseAllowOpportunistic: reuse another stream's free once it has "
       "completed on the GPU (see completion_ns)"},
      {"completion_ns", ParamKind::count, "0",
       "simulated time after which a free counts as completed on the GPU (opportunistic "
       "reuse); 0 = at once"},
      {"internal_dependencies", ParamKind::boolean, reuse_extra,
       "cudaMemPoolReuseAllowInternalDependencies: reuse any free of another "
       "stream, inserting a wait"},
      {"trim_to", ParamKind::bytes, "0",
       "cudaMemPoolTrimTo(pool, bytes) at release_cached (empty_cache), after a device sync"},
      {"fraction", ParamKind::number, "0",
       "PyTorch's set_per_process_memory_fraction: requested bytes in use + a request over this "
       "share of total memory fail without calling CUDA; 0 = no cap"},
      {"prealloc", ParamKind::text, "0",
       "TF_CUDA_MALLOC_ASYNC_SUPPORTED_PREALLOC: allocate and free this many bytes before the "
       "first request; threshold = the release threshold (TensorFlow's -1)"},
      {"deterministic", ParamKind::boolean, "false",
       "TF_DETERMINISTIC_ALLOCATOR: opportunistic and internal_dependencies off"},
      {"oom_sync", ParamKind::text, oom_sync,
       "when the device refuses a chunk: none, or synchronise the stream / device (trimming) "
       "and retry once"},
      {"one_stream", ParamKind::boolean, one_stream,
       "every request allocated and freed on one stream (TensorFlow's allocator has one)"},
  }};
}

class AsyncPoolPolicy final : public Policy {
 public:
  static constexpr auto kParams = async_params("0", "true", "none", "false");
  // PyTorch: threshold UINT64_MAX and all three reuse flags set explicitly; an OOM is
  // raised at once (no retry); empty_cache syncs every stream and trims to 0.
  static constexpr auto kTorchParams = async_params("max", "true", "none", "false");
  // TensorFlow: the default pool, threshold = pool size, one stream, sync and retry once.
  static constexpr auto kTensorFlowParams = async_params("tf", "true", "stream", "true");

  // What a spec sets, read once and checked without a device.
  struct Settings {
    enum class Threshold : std::uint8_t { bytes, max, tf };  // tf: TensorFlow's memory limit
    Bytes granularity;
    Threshold threshold;
    Bytes threshold_bytes;  // when threshold is bytes
    bool follow_events;
    bool opportunistic;     // deterministic off
    Nanos completion;
    bool internal;          // deterministic off
    Bytes trim_to;
    double fraction;
    std::optional<Bytes> prealloc;  // none: the release threshold
    OomSync oom_sync;
    bool one_stream;
  };
  static Settings settings(const Params& params);  // throws Error naming a bad value

  AsyncPoolPolicy(const Settings& settings, Device& device);
  ~AsyncPoolPolicy() override;

  Allocation allocate(const Request& request) override;
  void deallocate(const Block& block, Nanos now) override;
  PolicyStats stats() const override;
  PolicyInspection inspect(Detail detail) const override;
  void release_cached() override;
  void synchronize(const Sync& sync, Nanos now) override;
  void check() const override;

 private:
  struct Chunk {
    Segment segment;
    Bytes live = 0;
  };
  struct FreeRange {
    Bytes size;
    Stream stream;
    std::uint64_t freed;  // position in the order of frees; 0 = never used, any stream's
    Nanos freed_at = 0;   // when (simulated time)
  };
  using BySize = SizeBins;  // (size, address), and the range's handle in ranges_

  std::optional<Block> serve(Bytes size, const Request& request);
  std::optional<std::uint32_t> choose(Bytes size, Stream stream, Nanos now);  // a handle
  int reuse_rank(const FreeRange& range, Stream stream, Nanos now) const;  // -1 = not reusable
  bool completed(const FreeRange& range) const;
  void add_free(Addr addr, FreeRange range);
  void erase_free(std::uint32_t handle);
  void take_front(std::uint32_t handle, Bytes size);  // of a free range, for a request
  // A free range's record and size index entries, made or dropped; not its address entry.
  void remember(Addr addr, const FreeRange& range);
  void forget(std::uint32_t handle);
  std::uint32_t handle_of(Range range) const { return free_sizes_[free_sizes_.find(range.size, range.addr)].handle; }
  BySize& size_index(const FreeRange& range) {
    return range.freed == 0 ? never_used_ : freed_by_stream_[range.stream];
  }
  std::size_t chunk_of(Addr addr) const;
  bool grow(Bytes size, Stream stream);
  void trim(Bytes keep);
  Stream stream_of(Stream stream) const { return one_stream_ ? 0 : stream; }
  std::uint64_t& waited(Stream waiter, Stream on) { return waited_[{waiter, on}]; }

  Device& device_;
  Bytes granularity_;
  Bytes threshold_;
  bool follow_events_;
  bool opportunistic_;
  Nanos completion_;
  bool internal_;
  Bytes trim_to_;
  MemoryCap cap_;
  Bytes prealloc_;
  OomSync oom_sync_;
  bool one_stream_;
  bool preallocated_ = false;

  std::vector<Chunk> chunks_;  // by address
  // Every free range of every chunk, flat: by address (to find its neighbours), and its
  // stream and free order in a record whose handle each size index entry carries.
  AddressRanges free_;
  Slots<std::pair<Addr, FreeRange>> ranges_;
  // The same ranges by (size, address): those freed on each stream, and those never used
  // (any stream's), so that a stream's own best fit is one lookup.
  std::map<Stream, BySize> freed_by_stream_;
  BySize never_used_;
  SizeBins free_sizes_;  // every free range: the largest is the last; the way from a range to its handle
  Bytes reserved_ = 0;
  Bytes allocated_ = 0;
  Bytes requested_ = 0;  // raw bytes in use, what PyTorch's fraction counts
  std::uint64_t frees_ = 0;
  std::uint64_t all_completed_ = 0;                      // frees up to here completed everywhere
  std::map<Stream, std::uint64_t> completed_;            // per stream, by stream and event syncs
  std::map<std::pair<Stream, Stream>, std::uint64_t> waited_;  // (waiter, on) -> frees seen
  Bytes peak_reserved_ = 0;
  Bytes peak_used_ = 0;
  std::uint64_t trims_ = 0;
  std::uint64_t cross_stream_reuses_ = 0;
};

}  // namespace allocsim
