// A coalescing free list: free address ranges indexed by address (to find neighbours and
// the first fit) and, unless told to keep the address order only, by (size, address) (to
// find the best fit), both flat: leaves of ranges in address order (AddressRanges) and size
// bins (SizeBins). The building block of first fit, next fit, compaction, RMM's pool and the
// offline planners.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "policies/common/address_ranges.hpp"
#include "policies/common/size_bins.hpp"
#include "sim/units.hpp"

namespace allocsim {

// Contract: ranges never overlap; add() merges a range with free neighbours that touch
// it, so no two ranges in the list are adjacent, except across a boundary (keep_apart_at).
// Ranges of different device segments must not touch, or lie on either side of a
// boundary, or keep one list per segment: adjacency is all it knows.
class FreeList {
 public:
  // The orders a list keeps. A list searched only by address (first and next fit) keeps no
  // size order: it would pay for two index updates per change and read neither. Its best
  // and worst fits are then an Error.
  enum class Orders : std::uint8_t { address_and_size, address };

  explicit FreeList(Orders orders = Orders::address_and_size);
  FreeList(const FreeList&) = delete;
  FreeList& operator=(const FreeList&) = delete;

  // Addresses no merge crosses: a range starting at one never joins the range that ends
  // there (RMM's upstream blocks, which may touch, each coalesce only within themselves).
  // `starts` is sorted, the caller's, and outlives the list; nullptr: none.
  void keep_apart_at(const std::vector<Addr>* starts) { apart_at_ = starts; }

  void add(Range range);     // coalesces; returns nothing because the merged range is rarely needed
  void remove(Range range);  // exactly a range in the list
  // Takes the first `size` bytes of a range in the list; the rest stays free.
  void take_front(Range range, Bytes size);
  void clear();

  // The smallest range of at least `size` bytes, the lowest address among equals.
  std::optional<Range> best_fit(Bytes size) const;
  // best_fit, then take_front of `size` bytes of it, searching the size order once: the
  // range it took them from.
  std::optional<Range> take_best_fit(Bytes size);
  // The same for worst_fit, and for first_fit and next_fit searching the address order once.
  std::optional<Range> take_worst_fit(Bytes size);
  std::optional<Range> take_first_fit(Bytes size);
  std::optional<Range> take_next_fit(Bytes size, Addr from);
  // The lowest-addressed range of at least `size` bytes (a scan of the leaves: O(ranges / 64)).
  std::optional<Range> first_fit(Bytes size) const;
  // The first fitting range at or after `from`, wrapping around to the lowest address.
  std::optional<Range> next_fit(Bytes size, Addr from) const;
  // The largest range if it fits, the lowest address among equals.
  std::optional<Range> worst_fit(Bytes size) const;
  // The highest-addressed range, if any (where a growing arena ends).
  std::optional<Range> last() const {
    if (by_addr_.empty()) return std::nullopt;
    return by_addr_[by_addr_.prev(by_addr_.end())];
  }

  bool contains(Range range) const;  // exactly this range is in the list
  Bytes total() const { return total_; }
  Bytes largest() const;  // O(1) with the size order; without, a pass over the address leaves
  std::size_t count() const { return by_addr_.size(); }
  template <typename Visit>
  void for_each(Visit visit) const {
    by_addr_.for_each(visit);
  }

  void check() const;  // both indexes agree, nothing overlaps or touches, the total adds up

 private:
  // The rest of take_front once `range` (at `by_addr`) has left the size order.
  void take_rest(AddressRanges::Pos by_addr, Range range, Bytes size);
  std::optional<Range> take_at(AddressRanges::Pos by_addr, Bytes size);  // nullopt at end()
  std::optional<Range> take_at(SizeBins::Cursor by_size, Bytes size);     // nullopt at end()
  SizeBins::Cursor worst_fit_at(Bytes size) const;                         // end() when none fits
  AddressRanges::Pos next_fit_at(Bytes size, Addr from) const;             // end() when none fits
  std::optional<Range> range_at(SizeBins::Cursor by_size) const;           // nullopt at end()
  std::optional<Range> range_at(AddressRanges::Pos by_addr) const;         // nullopt at end()
  bool apart_at(Addr addr) const;  // a boundary of keep_apart_at starts there
  void need_size_order(const char* fit) const;  // Error when the list keeps none

  AddressRanges by_addr_;
  SizeBins by_size_;  // handles unused; empty when !sized_
  bool sized_;
  Bytes total_ = 0;
  const std::vector<Addr>* apart_at_ = nullptr;
};

}  // namespace allocsim
