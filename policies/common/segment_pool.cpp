#include "policies/common/segment_pool.hpp"

#include <algorithm>
#include <string>

#include "sim/error.hpp"

namespace allocsim {

std::optional<Segment> SegmentPool::add(Bytes bytes, Bytes alignment, Bytes guard) {
  return table_.add(bytes, alignment, guard, [&](Range usable) { free_.add(usable); });
}

void SegmentPool::take(Range range, Bytes size) {
  free_.take_front(range, size);
  table_.count_live(range.addr, size);
}

std::optional<Range> SegmentPool::taken(std::optional<Range> range, Bytes size) {
  if (range) table_.count_live(range->addr, size);
  return range;
}

void SegmentPool::give(Addr addr, Bytes size) {
  free_.add(Range{addr, size});
  table_.count_free(addr, size);
}

void SegmentPool::moved(Addr from, Addr to, Bytes size) {
  table_.count_free(from, size);
  table_.count_live(to, size);
}

void SegmentPool::release_empty() {
  table_.release_empty([&](Range usable) { free_.remove(usable); });
}

void SegmentPool::check(std::string_view owner, Bytes alignment) const {
  free_.check();
  const std::string who(owner);
  Bytes usable = 0;
  Bytes live = 0;
  for (const PooledSegment& held : segments()) {
    usable += held.end - held.start;
    live += held.live;
  }
  if (free_.total() + live != usable) {
    throw Error(who + ": free " + std::to_string(free_.total()) + " + live " + std::to_string(live) +
                " != usable bytes of the segments " + std::to_string(usable));
  }
  free_.for_each([&](Range range) {
    if (range.addr % alignment != 0 || range.size % alignment != 0) throw Error(who + ": unaligned free range");
    const PooledSegment& held = segments()[segment_of(range.addr)];
    if (range.addr < held.start || range.end() > held.end) throw Error(who + ": a free range crosses its segment's bounds");
  });
}

}  // namespace allocsim
