#include "policies/common/segment_pool.hpp"

#include <algorithm>
#include <string>

#include "sim/error.hpp"

namespace allocsim {

SegmentPool::~SegmentPool() {
  for (const PooledSegment& held : segments_) device_.free(held.segment);
}

std::optional<Segment> SegmentPool::add(Bytes bytes, Bytes alignment, Bytes guard) {
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
  if (start < end) free_.add(Range{start, end - start});
  return segment;
}

std::size_t SegmentPool::segment_of(Addr addr) const {
  if (segments_.size() == 1) return 0;
  const auto after = std::upper_bound(segments_.begin(), segments_.end(), addr,
                                      [](Addr a, const PooledSegment& held) { return a < held.segment.addr; });
  return static_cast<std::size_t>(after - segments_.begin()) - 1;
}

void SegmentPool::take(Range range, Bytes size) {
  free_.take_front(range, size);
  segments_[segment_of(range.addr)].live += size;
}

std::optional<Range> SegmentPool::taken(std::optional<Range> range, Bytes size) {
  if (range) segments_[segment_of(range->addr)].live += size;
  return range;
}

void SegmentPool::give(Addr addr, Bytes size) {
  free_.add(Range{addr, size});
  segments_[segment_of(addr)].live -= size;
}

void SegmentPool::moved(Addr from, Addr to, Bytes size) {
  segments_[segment_of(from)].live -= size;
  segments_[segment_of(to)].live += size;
}

void SegmentPool::release_empty() {
  std::erase_if(segments_, [&](const PooledSegment& held) {
    if (held.live != 0) return false;
    if (held.start < held.end) free_.remove(Range{held.start, held.end - held.start});
    device_.free(held.segment);
    reserved_ -= held.segment.bytes;
    return true;
  });
}

void SegmentPool::release(std::size_t index) {
  const Segment segment = segments_.at(index).segment;
  segments_.erase(segments_.begin() + static_cast<std::ptrdiff_t>(index));
  device_.free(segment);
  reserved_ -= segment.bytes;
}

Bytes SegmentPool::releasable() const {
  Bytes releasable = 0;
  for (const PooledSegment& held : segments_) releasable += held.live == 0 ? held.segment.bytes : 0;
  return releasable;
}

void SegmentPool::check(std::string_view owner, Bytes alignment) const {
  free_.check();
  const std::string who(owner);
  Bytes usable = 0;
  Bytes live = 0;
  for (const PooledSegment& held : segments_) {
    usable += held.end - held.start;
    live += held.live;
  }
  if (free_.total() + live != usable) {
    throw Error(who + ": free " + std::to_string(free_.total()) + " + live " + std::to_string(live) +
                " != usable bytes of the segments " + std::to_string(usable));
  }
  free_.for_each([&](Range range) {
    if (range.addr % alignment != 0 || range.size % alignment != 0) throw Error(who + ": unaligned free range");
    const PooledSegment& held = segments_[segment_of(range.addr)];
    if (range.addr < held.start || range.end() > held.end) throw Error(who + ": a free range crosses its segment's bounds");
  });
}

}  // namespace allocsim
