#include "policies/common/tiled_segments.hpp"

#include <string>

#include "sim/error.hpp"

namespace allocsim {

std::optional<Segment> TiledSegments::add(Bytes bytes, Bytes alignment, Bytes guard) {
  return table_.add(bytes, alignment, guard, [&](Range usable) { free_.add(usable); });
}

Range TiledSegments::take(SizeBins::Cursor fit, Bytes size, AllocId id) {
  const Range piece = free_.take(fit, size, id);
  table_.count_live(piece.addr, size);
  return piece;
}

void TiledSegments::give(AllocId id, Addr addr) {
  const Range block = free_.give(id, addr);
  table_.count_free(block.addr, block.size);
}

void TiledSegments::release_empty() {
  table_.release_empty([&](Range usable) { free_.remove(usable); });
}

void TiledSegments::check(std::string_view owner, Bytes alignment) const {
  const std::string who(owner);
  free_.check(who, alignment);
  std::size_t tiled = 0;
  free_.for_each_range([&](Range range, Bytes live) {
    const PooledSegment& held = segments()[table_.segment_of(range.addr)];
    if (range.addr != held.start || range.end() != held.end) throw Error(who + ": a tiled range is not a segment's usable bytes");
    if (live != held.live) throw Error(who + ": a segment counts other live bytes than its pieces");
    ++tiled;
  });
  std::size_t usable = 0;
  for (const PooledSegment& held : segments()) usable += held.start < held.end ? 1 : 0;
  if (tiled != usable) throw Error(who + ": a segment's usable bytes are not tiled");
}

}  // namespace allocsim
