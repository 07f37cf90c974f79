// The device segments a placement carves blocks from, in address order: each segment's
// usable bytes (aligned at the start, a guard left at the end so that two segments' free
// space never touches) and the bytes of live blocks in it. The bookkeeping SegmentPool
// and TiledSegments share; what is free inside the segments is theirs to index.
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <vector>

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
  // bytes before its end: the segment as held, or nullopt when the device refuses.
  std::optional<PooledSegment> add(Bytes bytes, Bytes alignment, Bytes guard);
  // The segment holding `addr` (an address inside one).
  std::size_t segment_of(Addr addr) const;
  // `size` bytes at `addr` are live now / are free again.
  void count_live(Addr addr, Bytes size) { segments_[segment_of(addr)].live += size; }
  void count_free(Addr addr, Bytes size) { segments_[segment_of(addr)].live -= size; }
  // One segment back to the device; its usable bytes must have left the caller's index.
  void release(std::size_t index);

  std::span<const PooledSegment> segments() const { return segments_; }
  Bytes reserved() const { return reserved_; }
  Bytes releasable() const;  // bytes of segments with no live byte

 private:
  Device& device_;
  std::vector<PooledSegment> segments_;  // by address
  Bytes reserved_ = 0;
};

}  // namespace allocsim
