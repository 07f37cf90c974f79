// The device segments bestfit and worstfit carve blocks from: SegmentPool's segments,
// guards and live counts (SegmentTable), with what is free in them indexed by size and
// tiled with boundary tags (TiledRanges), so that a free merges without a search by
// address. firstfit and nextfit keep SegmentPool, whose address order they search.
#pragma once

#include <optional>
#include <span>
#include <string_view>

#include "policies/common/segment_table.hpp"
#include "policies/common/tiled_ranges.hpp"
#include "sim/device.hpp"

namespace allocsim {

// Contract: every block given back was taken, once, for the same id; the destructor
// returns every segment.
class TiledSegments {
 public:
  explicit TiledSegments(Device& device) : table_(device) {}

  // Takes `bytes` from the device, usable from the first `alignment` boundary to `guard`
  // bytes before its end, all of it free: the segment, or nullopt when the device refuses.
  std::optional<Segment> add(Bytes bytes, Bytes alignment, Bytes guard);

  SizeBins::Cursor best_fit(Bytes size) const { return free_.best_fit(size); }
  SizeBins::Cursor worst_fit(Bytes size) const { return free_.worst_fit(size); }
  // TiledRanges' take and give, counting the segment's live bytes.
  Range take(SizeBins::Cursor fit, Bytes size, AllocId id);
  void give(AllocId id, Addr addr);
  void reserve_ids(std::size_t allocations) { free_.reserve_ids(allocations); }

  // Every segment with no live block back to the device.
  void release_empty();

  std::span<const PooledSegment> segments() const { return table_.segments(); }
  const TiledRanges& free() const { return free_; }
  Bytes reserved() const { return table_.reserved(); }
  Bytes releasable() const { return table_.releasable(); }

  // TiledRanges' check, and each segment's usable bytes one tiled range with the live
  // bytes it counts; Error naming `owner` otherwise.
  void check(std::string_view owner, Bytes alignment) const;

 private:
  SegmentTable table_;
  TiledRanges free_;
};

}  // namespace allocsim
