#include "policies/common/segment_table.hpp"

#include <algorithm>

namespace allocsim {

SegmentTable::~SegmentTable() {
  for (const PooledSegment& held : segments_) device_.free(held.segment);
}

std::optional<PooledSegment> SegmentTable::add_segment(Bytes bytes, Bytes alignment, Bytes guard) {
  const auto segment = device_.malloc(bytes);
  if (!segment) return std::nullopt;
  // The device promises only kSegmentAlignment; skip to the first aligned address.
  const Addr start = std::min(align_up(segment->addr, alignment), segment->addr + segment->bytes);
  const Addr end = std::max(start, segment->addr + segment->bytes - guard);
  const PooledSegment held{*segment, start, end, 0};
  segments_.insert(std::upper_bound(segments_.begin(), segments_.end(), held,
                                    [](const PooledSegment& a, const PooledSegment& b) {
                                      return a.segment.addr < b.segment.addr;
                                    }),
                   held);
  reserved_ += segment->bytes;
  return held;
}

std::size_t SegmentTable::segment_of(Addr addr) const {
  if (segments_.size() == 1) return 0;
  const auto after = std::upper_bound(segments_.begin(), segments_.end(), addr,
                                      [](Addr a, const PooledSegment& held) { return a < held.segment.addr; });
  return static_cast<std::size_t>(after - segments_.begin()) - 1;
}

void SegmentTable::release(std::size_t index) {
  const Segment segment = segments_.at(index).segment;
  segments_.erase(segments_.begin() + static_cast<std::ptrdiff_t>(index));
  device_.free(segment);
  reserved_ -= segment.bytes;
}

Bytes SegmentTable::releasable() const {
  Bytes releasable = 0;
  for (const PooledSegment& held : segments_) releasable += held.live == 0 ? held.segment.bytes : 0;
  return releasable;
}

}  // namespace allocsim
