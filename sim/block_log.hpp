// Every block and device segment of a run with where and when it lived: the raw material
// of a memory map (address x time). An observer of the engine's block and segment calls;
// a segment is a cudaMalloc'd range or a mapped one (VMM); bounded per tenant (the records
// past the bound are counted, not kept).
#pragma once

#include <cstddef>
#include <limits>
#include <vector>

#include "sim/observer.hpp"

namespace allocsim {

constexpr std::size_t kStillLive = std::numeric_limits<std::size_t>::max();

struct BlockSpan {
  AllocId id;
  Addr addr;
  Bytes size;
  Bytes requested;
  std::size_t placed_event;
  std::size_t freed_event = kStillLive;  // a move ends a span at its event; the next span starts there
  Nanos placed;
  Nanos freed = 0;
};

// A cudaMalloc'd segment, or a range mapped in one call (VMM). An unmap may take part of a
// mapped range: the part it took ends there, the parts it left go on as spans of their own
// (from the same reservation), so that open spans are always exactly what is mapped now.
struct SegmentSpan {
  Addr addr;
  Bytes bytes;
  std::size_t reserved_event;
  std::size_t released_event = kStillLive;
  Nanos reserved;
  Nanos released = 0;
  bool mapped = false;  // pages mapped into a reserved range: free space runs on into mapped neighbours
};

struct TenantBlocks {
  std::vector<BlockSpan> blocks;      // in order of placement
  std::vector<SegmentSpan> segments;  // in order of reservation (what a partial unmap leaves: at its unmap)
  std::size_t dropped_blocks = 0;     // past the bound
  std::size_t dropped_segments = 0;
};

class BlockLog final : public Observer {
 public:
  explicit BlockLog(std::size_t max_spans_per_tenant = 2'000'000);

  void on_event(const Sample&) override {}
  void on_block(const BlockEvent& block) override;
  void on_segment(const SegmentEvent& segment) override;

  // By tenant index; a tenant that placed nothing may be missing at the end.
  const std::vector<TenantBlocks>& tenants() const { return tenants_; }

 private:
  struct Open {
    std::vector<std::size_t> block_by_id;  // by AllocId: index into blocks, or kStillLive when none is open
    std::vector<std::size_t> open_segments;  // indices into segments, still reserved
  };
  TenantBlocks& tenant(std::size_t index);
  void place(const BlockEvent& block);
  void end_block(const BlockEvent& block);

  std::size_t max_spans_;
  std::vector<TenantBlocks> tenants_;
  std::vector<Open> open_;
};

}  // namespace allocsim
