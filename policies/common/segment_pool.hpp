// The device segments a placement policy carves blocks from (SegmentTable) and one
// coalescing free list over all of them, indexed by address and (unless the pool is searched
// by address only) by size: firstfit, nextfit and compact share it (bestfit and worstfit need
// no address order: TiledSegments).
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <string_view>

#include "policies/common/free_list.hpp"
#include "policies/common/segment_table.hpp"
#include "sim/device.hpp"

namespace allocsim {

// Contract: segments are kept in address order; free() holds exactly the usable bytes of
// the segments that no block covers, once the caller keeps it so (take and give do; a
// caller that moves blocks rebuilds it). The destructor returns every segment.
class SegmentPool {
 public:
  // `orders`: the free list's (FreeList::Orders::address for a pool searched by address only).
  explicit SegmentPool(Device& device, FreeList::Orders orders = FreeList::Orders::address_and_size)
      : table_(device), free_(orders) {}
  SegmentPool(const SegmentPool&) = delete;
  SegmentPool& operator=(const SegmentPool&) = delete;

  // Takes `bytes` from the device, usable from the first `alignment` boundary to `guard`
  // bytes before its end, all of it free: the segment, or nullopt when the device refuses.
  std::optional<Segment> add(Bytes bytes, Bytes alignment, Bytes guard);
  // The segment holding `addr` (an address inside one).
  std::size_t segment_of(Addr addr) const { return table_.segment_of(addr); }

  // A block of `size` bytes at the front of free `range` is live now / was freed.
  void take(Range range, Bytes size);
  // Counts, as take does, a take free() did itself (FreeList::take_best_fit and the like):
  // `range` is what it returned, passed through.
  std::optional<Range> taken(std::optional<Range> range, Bytes size);
  void give(Addr addr, Bytes size);
  // Only the live-byte counts of the segments of `from` and `to` (a block moved).
  void moved(Addr from, Addr to, Bytes size);

  // Every segment with no live byte back to the device.
  void release_empty();
  // One segment back to the device; the caller rebuilds free().
  void release(std::size_t index) { table_.release(index); }

  // Free + live == usable, free ranges inside their segments and on `alignment`; Error
  // naming `owner` otherwise.
  void check(std::string_view owner, Bytes alignment) const;

  std::span<const PooledSegment> segments() const { return table_.segments(); }
  FreeList& free() { return free_; }
  const FreeList& free() const { return free_; }
  Bytes reserved() const { return table_.reserved(); }
  Bytes releasable() const { return table_.releasable(); }  // bytes of segments with no live byte

 private:
  SegmentTable table_;
  FreeList free_;
};

}  // namespace allocsim
