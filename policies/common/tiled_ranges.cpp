#include "policies/common/tiled_ranges.hpp"

#include <algorithm>

#include "sim/error.hpp"

namespace allocsim {

void TiledRanges::add(Range range) {
  index(pieces_.add(Piece{range.addr, range.size, kNone, kNone, AllocId{}, false}));
  total_ += range.size;
}

void TiledRanges::remove(Range range) {
  const SizeBins::Cursor found = free_.find(range.size, range.addr);
  if (found == SizeBins::end() || pieces_[free_[found].handle].prev != kNone ||
      pieces_[free_[found].handle].next != kNone) {
    throw Error("tiled ranges: " + std::to_string(range.size) + " bytes at " + std::to_string(range.addr) +
                " are not a whole free range");
  }
  const std::uint32_t piece = free_[found].handle;
  free_.erase(found);
  retire(piece);
  total_ -= range.size;
}

SizeBins::Cursor TiledRanges::worst_fit(Bytes size) const {
  if (free_.empty() || free_.back().size < size) return SizeBins::end();
  return free_.lower_bound(free_.back().size);  // the lowest address of the largest size
}

Range TiledRanges::take(SizeBins::Cursor fit, Bytes size, AllocId id) {
  const SizeBins::Entry found = free_[fit];
  free_.erase(fit);
  const std::uint32_t piece = found.handle;
  if (size < found.size) index(split_after(pieces_, piece, size, pieces_[piece]));
  pieces_[piece].live = true;
  pieces_[piece].id = id;
  ++live_;
  total_ -= size;
  const std::size_t at = index_of(id);
  if (at >= piece_of_.size()) piece_of_.resize(std::max(at + 1, piece_of_.size() * 2), kNone);
  piece_of_[at] = piece;
  return Range{found.addr, found.size};
}

void TiledRanges::reserve_ids(std::size_t allocations) {
  if (allocations > piece_of_.size()) piece_of_.resize(allocations, kNone);
}

Range TiledRanges::give(AllocId id, Addr addr) {
  const std::size_t at = index_of(id);
  std::uint32_t piece = at < piece_of_.size() ? piece_of_[at] : kNone;
  if (piece == kNone || pieces_[piece].ptr != addr) {
    throw Error("free of a block it did not hand out (id " + std::to_string(at) + " at " + std::to_string(addr) + ")");
  }
  piece_of_[at] = kNone;
  const Range block{addr, pieces_[piece].size};
  pieces_[piece].live = false;
  --live_;
  total_ += block.size;
  // Next first, then previous, as BFC coalesces; the merged piece is the same either way.
  if (const std::uint32_t next = pieces_[piece].next; next != kNone && !pieces_[next].live) {
    unindex(next);
    absorb(piece, next);
  }
  if (const std::uint32_t prev = pieces_[piece].prev; prev != kNone && !pieces_[prev].live) {
    unindex(prev);
    absorb(prev, piece);
    piece = prev;
  }
  index(piece);
  return block;
}

void TiledRanges::index(std::uint32_t piece) { free_.insert(SizeBins::Entry{pieces_[piece].size, pieces_[piece].ptr, piece}); }

void TiledRanges::unindex(std::uint32_t piece) { free_.erase(pieces_[piece].size, pieces_[piece].ptr); }

void TiledRanges::absorb(std::uint32_t left, std::uint32_t right) {
  merge_next(pieces_, left, right);
  retire(right);
}

void TiledRanges::retire(std::uint32_t piece) {
  pieces_[piece].size = 0;  // marks the slot unused
  pieces_.remove(piece);
}

void TiledRanges::check(const std::string& owner, Bytes alignment) const {
  const auto fail = [&](const char* what) { throw Error(owner + ": " + what); };
  free_.check();
  std::size_t free_pieces = 0;
  std::size_t live_pieces = 0;
  Bytes total = 0;
  for (std::uint32_t first = 0; first < pieces_.extent(); ++first) {
    if (pieces_[first].size == 0 || pieces_[first].prev != kNone) continue;
    Addr expected = pieces_[first].ptr;
    for (std::uint32_t at = first; at != kNone; at = pieces_[at].next) {
      const Piece& piece = pieces_[at];
      if (piece.ptr != expected || piece.size == 0) fail("pieces do not tile their range");
      if (piece.next != kNone && pieces_[piece.next].prev != at) fail("broken neighbour links");
      expected += piece.size;
      if (piece.live) {
        const std::size_t id = index_of(piece.id);
        if (id >= piece_of_.size() || piece_of_[id] != at) fail("a live piece its id does not name");
        ++live_pieces;
        continue;
      }
      if (piece.ptr % alignment != 0 || piece.size % alignment != 0) fail("unaligned free range");
      if (piece.next != kNone && !pieces_[piece.next].live) fail("two free pieces touch");
      if (!free_.contains(piece.size, piece.ptr)) fail("a free piece missing from the size index");
      ++free_pieces;
      total += piece.size;
    }
  }
  if (free_pieces != free_.size()) fail("stale entries in the size index");
  if (total != total_) fail("the free bytes are off");
  if (live_pieces != live_) fail("live pieces other than those taken");
}

}  // namespace allocsim
