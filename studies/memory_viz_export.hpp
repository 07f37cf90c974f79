// --memory-viz FILE: the simulated run as a PyTorch memory snapshot (what
// torch.cuda.memory._dump_snapshot writes), which pytorch.org/memory_viz opens and
// `allocsim replay-check` reads back. Any policy: segments are what the policy holds of
// the device (each cudaMalloc'd segment; for VMM policies, each run of mapped pages).
//
// - Each tenant is one device of the snapshot (device index = tenant index): its
//   `device_traces` list and its `segments`, as the process held them when it stopped
//   (trace done, OOM stop or hang), before the exit that frees everything.
// - Trace entries: alloc (size: the requested bytes, as PyTorch records), free_requested
//   then free_completed, segment_alloc / segment_free, segment_map / segment_unmap, oom
//   (size: the requested bytes; device_free), each with time_us (simulated time). A block
//   the policy relocates (compaction) is freed where it was and allocated where it went.
// - Blocks tile each segment in address order, free gaps as `inactive` blocks; frames
//   are empty lists (no stacks in a simulation).
// - Addresses are rebased (the lowest segment's GiB becomes 1 GiB) so that every integer
//   stays below 2^53, as the viewer's oldest unpickler needs; a run too wide is an Error.
#pragma once

#include <cstddef>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "sim/engine.hpp"
#include "sim/observer.hpp"

namespace allocsim {

class PickleWriter;

class MemoryVizExport final : public Observer {
 public:
  explicit MemoryVizExport(const Scenario& scenario);

  void on_event(const Sample&) override {}
  void on_block(const BlockEvent& event) override;
  void on_segment(const SegmentEvent& event) override;
  void on_oom(const OomRecord& record) override;
  void on_exit(std::size_t tenant, Nanos time) override;

  // The snapshot as a protocol-2 pickle. Throws Error when a live block lies outside
  // every segment or overlaps another, or when rebased addresses reach 2^53.
  void write(std::ostream& out) const;

  enum class Action : std::uint8_t { alloc, free_requested, free_completed, segment_alloc, segment_free, segment_map,
                                     segment_unmap, oom };
  struct Entry {
    Action action;
    Addr addr;    // oom: none
    Bytes size;
    Stream stream;
    Nanos time;
    Bytes device_free = 0;  // oom only
  };

 private:
  struct LiveBlock {
    Addr addr;
    Bytes size;
    Bytes requested;
    Stream stream;
  };
  struct Piece {  // a malloc'd segment, or mapped pages
    Bytes size;
    Stream stream;
  };
  struct Tenant {
    std::vector<Entry> entries;
    std::map<std::uint32_t, LiveBlock> live;  // by allocation id
    std::map<Addr, Piece> segments;           // malloc'd, by address
    std::map<Addr, Piece> mapped;             // mapped pages, by address
    bool exited = false;
  };
  Tenant* recording(std::size_t tenant);
  void add(Tenant& tenant, Action action, Addr addr, Bytes size, Stream stream, Nanos time);
  void write_segments(PickleWriter& pickle, std::size_t device, const Tenant& tenant, Addr shift) const;

  const Scenario& scenario_;
  std::vector<Tenant> tenants_;
};

}  // namespace allocsim
