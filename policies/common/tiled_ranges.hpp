// Free space indexed by size alone, with boundary tags (Knuth, TAOCP 2.5): each range
// handed in is tiled by pieces, live or free, that link to their neighbours, so a freed
// block finds its free neighbours through the links and merges with them without a search
// by address; free pieces are found by (size, address) in SizeBins, as TensorFlow's BFC
// finds its chunks. The index of bestfit, worstfit (TiledSegments) and vmm's small pages.
// FreeList is the one to take when a fit searches by address (first fit, next fit).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "policies/common/address_ranges.hpp"  // Range
#include "policies/common/size_bins.hpp"
#include "policies/common/slots.hpp"
#include "sim/types.hpp"

namespace allocsim {

// Contract: ranges added never overlap; a block is given back once, with the id it was
// taken for; a range is removed only whole and free.
class TiledRanges {
 public:
  // A new free range, tiled on its own: pieces never merge across two ranges, even ones
  // that touch.
  void add(Range range);
  // Exactly a range added, all of it free again; Error otherwise.
  void remove(Range range);

  // The smallest free piece of at least `size` bytes, the lowest address among equals; end().
  SizeBins::Cursor best_fit(Bytes size) const { return free_.lower_bound(size); }
  // The largest free piece if it holds `size` bytes, the lowest address among equals; end().
  SizeBins::Cursor worst_fit(Bytes size) const;
  // Takes the first `size` bytes of the free piece at `fit` (not end()) for allocation
  // `id`; the rest stays free. Returns the piece as it was: the block starts there.
  Range take(SizeBins::Cursor fit, Bytes size, AllocId id);
  // Frees the block taken for `id` at `addr`, merged with its free neighbours: the
  // block's range. Error when no such block is live.
  Range give(AllocId id, Addr addr);
  void reserve_ids(std::size_t allocations);  // so that take() grows nothing up to them

  Bytes largest() const { return free_.empty() ? 0 : free_.back().size; }
  Bytes total() const { return total_; }          // free bytes
  std::size_t count() const { return free_.size(); }  // free pieces

  // Each range added and not removed, with the live bytes in it, in no particular order.
  template <typename Visit>
  void for_each_range(Visit visit) const {
    for (std::uint32_t first = 0; first < pieces_.extent(); ++first) {
      if (pieces_[first].size == 0 || pieces_[first].prev != kNone) continue;  // unused, or not a first piece
      Bytes size = 0;
      Bytes live = 0;
      for (std::uint32_t at = first; at != kNone; at = pieces_[at].next) {
        size += pieces_[at].size;
        live += pieces_[at].live ? pieces_[at].size : 0;
      }
      visit(Range{pieces_[first].ptr, size}, live);
    }
  }

  // The pieces tile their ranges, the links agree, no two free pieces touch, every free
  // one is indexed and on `alignment`, every live one known by its id; Error naming
  // `owner` otherwise.
  void check(const std::string& owner, Bytes alignment) const;

 private:
  static constexpr std::uint32_t kNone = kNoNeighbour;
  struct Piece {
    Addr ptr;
    Bytes size;  // 0: the slot is unused
    std::uint32_t prev;  // neighbours in the same range, kNone at its ends
    std::uint32_t next;
    AllocId id;  // of a live piece: what piece_of_ knows it by
    bool live;
  };

  void index(std::uint32_t piece);
  void unindex(std::uint32_t piece);
  void absorb(std::uint32_t left, std::uint32_t right);  // right, left's next neighbour, joins it; neither indexed
  void retire(std::uint32_t piece);

  Slots<Piece> pieces_;
  SizeBins free_;                        // every free piece; handles are pieces
  std::vector<std::uint32_t> piece_of_;  // by AllocId: the live piece, or kNone
  std::size_t live_ = 0;                 // pieces taken and not given back
  Bytes total_ = 0;
};

}  // namespace allocsim
