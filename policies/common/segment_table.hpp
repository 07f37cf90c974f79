// The device segments a placement carves blocks from, in address order: each segment's
// usable bytes (aligned at the start, a guard left at the end so that two segments' free
// space never touches) and the bytes of live blocks in it. The bookkeeping SegmentPool
// and TiledSegments share; what is free inside the segments is theirs to index.
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <vector>

#include "policies/common/address_ranges.hpp"  // Range
#include "sim/device.hpp"

namespace allocsim {

struct PooledSegment {
  Segment segment;
  Addr start;       // the first usable (aligned) address
  Addr end;         // one past the last usable byte, before the guard
  Bytes live = 0;   // bytes of live blocks in it
};

// Contract: the destructor returns every segment still held.
class SegmentTable {
 public:
  explicit SegmentTable(Device& device) : device_(device) {}
  ~SegmentTable();
  SegmentTable(const SegmentTable&) = delete;
  SegmentTable& operator=(const SegmentTable&) = delete;

  // Takes `bytes` from the device, usable from the first `alignment` boundary to `guard`
  // bytes before its end, and hands the usable bytes (if any) to `add_free`: the segment,
  // or nullopt when the device refuses.
  template <typename AddFree>
  std::optional<Segment> add(Bytes bytes, Bytes alignment, Bytes guard, AddFree add_free) {
    const std::optional<PooledSegment> held = add_segment(bytes, alignment, guard);
    if (!held) return std::nullopt;
    if (held->start < held->end) add_free(Range{held->start, held->end - held->start});
    return held->segment;
  }
  // The segment holding `addr` (an address inside one).
  std::size_t segment_of(Addr addr) const;
  // `size` bytes at `addr` are live now / are free again.
  void count_live(Addr addr, Bytes size) { segments_[segment_of(addr)].live += size; }
  void count_free(Addr addr, Bytes size) { segments_[segment_of(addr)].live -= size; }
  // One segment back to the device; its usable bytes must have left the caller's index.
  void release(std::size_t index);
  // Every segment with no live byte back to the device, in address order, each one's
  // usable bytes (if any) first taken out of the caller's index by `remove_free`.
  template <typename RemoveFree>
  void release_empty(RemoveFree remove_free) {
    for (std::size_t index = 0; index < segments_.size();) {
      const PooledSegment& held = segments_[index];
      if (held.live != 0) {
        ++index;
        continue;
      }
      if (held.start < held.end) remove_free(Range{held.start, held.end - held.start});
      release(index);
    }
  }

  std::span<const PooledSegment> segments() const { return segments_; }
  Bytes reserved() const { return reserved_; }
  Bytes releasable() const;  // bytes of segments with no live byte

 private:
  std::optional<PooledSegment> add_segment(Bytes bytes, Bytes alignment, Bytes guard);

  Device& device_;
  std::vector<PooledSegment> segments_;  // by address
  Bytes reserved_ = 0;
};

}  // namespace allocsim
