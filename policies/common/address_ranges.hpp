// Ranges in address order, flat: leaves of up to 64 ranges each (addresses and sizes in
// two arrays), with each leaf's first address and largest size kept in arrays of their own.
// A lookup is a binary search over the leaves, then over one leaf; a first fit scans the
// leaves' largest sizes, then one leaf, instead of walking every range before it in a tree.
// Leaves split when full and merge with a neighbour when sparse; their storage is reused,
// so a steady state allocates nothing. The address index of FreeList.
// Contract: ranges never overlap; set() keeps a range between its neighbours.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "policies/common/flat_search.hpp"
#include "sim/units.hpp"

namespace allocsim {

struct Range {
  Addr addr;
  Bytes size;
  Addr end() const { return addr + size; }
  friend bool operator==(const Range&, const Range&) = default;
};

class AddressRanges {
 public:
  static constexpr std::uint32_t kLeaf = 64;
  // A position: the leaf's place in address order, then the index in it; end() is
  // {leaves, 0}. Positions stay valid only until the next insert or erase.
  struct Pos {
    std::uint32_t leaf;
    std::uint32_t index;
    friend bool operator==(const Pos&, const Pos&) = default;
  };

  Pos begin() const { return Pos{0, 0}; }
  Pos end() const { return Pos{static_cast<std::uint32_t>(order_.size()), 0}; }
  Pos next(Pos at) const;
  Pos prev(Pos at) const;  // at must not be begin()
  Range operator[](Pos at) const {
    const Leaf& leaf = leaves_[order_[at.leaf]];
    return Range{leaf.addr[at.index], leaf.size[at.index]};
  }

  // The first range at or after `addr`, or end().
  Pos lower_bound(Addr addr) const;
  // The lowest-addressed range at or after `from` of at least `size` bytes.
  std::optional<Range> first_fit(Bytes size, Addr from) const;
  Pos first_fit_at(Bytes size, Addr from) const;  // the same: its position, or end()

  void insert(Range range);  // between its neighbours
  // The same, where `at` is lower_bound(range.addr), already known to the caller.
  void insert(Pos at, Range range);
  void erase(Pos at);
  void set(Pos at, Range range);  // a new place and size between the same neighbours

  // Adds `range` merged with each neighbour that touches it and that joins(neighbour)
  // accepts; absorbed(neighbour) hears of each one merged in, before it goes. Returns the
  // merged range. A merge grows a neighbour in place: no range moves. The coalescing of
  // FreeList, RMM's arena and the stream-ordered pools.
  template <typename Joins, typename Absorbed>
  Range add_merging(Range range, Joins joins, Absorbed absorbed) {
    const Pos next = lower_bound(range.addr);
    const bool has_next = next != end() && (*this)[next].addr == range.end() && joins((*this)[next]);
    const bool has_prev = next != begin() && (*this)[prev(next)].end() == range.addr && joins((*this)[prev(next)]);
    Range merged = range;
    if (has_next) {
      absorbed((*this)[next]);
      merged.size += (*this)[next].size;
    }
    if (has_prev) {
      const Pos at = prev(next);
      const Range before = (*this)[at];
      absorbed(before);
      merged = Range{before.addr, before.size + merged.size};
      set(at, merged);  // before erasing `next`, which may move positions
      if (has_next) erase(next);
    } else if (has_next) {
      set(next, merged);
    } else {
      insert(next, merged);
    }
    return merged;
  }

  Bytes largest() const;  // the largest range's size, 0 when empty: O(leaves)
  std::size_t size() const { return count_; }
  bool empty() const { return count_ == 0; }
  void clear();
  template <typename Visit>
  void for_each(Visit visit) const {
    for (const std::uint32_t id : order_) {
      const Leaf& leaf = leaves_[id];
      for (std::uint32_t i = 0; i < leaf.count; ++i) visit(Range{leaf.addr[i], leaf.size[i]});
    }
  }

  // Leaves sorted and not empty, their first addresses, largest sizes and counts right;
  // Error otherwise.
  void check() const;

 private:
  struct Leaf {
    std::uint32_t count = 0;
    std::array<Addr, kLeaf> addr;
    std::array<Bytes, kLeaf> size;
  };

  std::uint32_t leaf_for(Addr addr) const;  // the leaf (in order) whose span holds addr
  std::uint32_t new_leaf();
  void refresh(std::uint32_t at);  // first_ and largest_ of the leaf at `at`, from its ranges
  void split(std::uint32_t at);
  void remove_leaf(std::uint32_t at);
  void merge_sparse(std::uint32_t at);

  std::vector<Leaf> leaves_;           // storage, in any order
  std::vector<std::uint32_t> spare_;   // unused storage
  std::vector<std::uint32_t> order_;   // leaves in address order
  std::vector<Addr> first_;            // by order: each leaf's lowest address
  std::vector<Bytes> largest_;         // by order: each leaf's largest size
  std::size_t count_ = 0;
};

// The lookups every add and take makes, inline.
inline AddressRanges::Pos AddressRanges::next(Pos at) const {
  if (at.index + 1 < leaves_[order_[at.leaf]].count) return Pos{at.leaf, at.index + 1};
  return Pos{at.leaf + 1, 0};
}

inline AddressRanges::Pos AddressRanges::prev(Pos at) const {
  if (at.index > 0) return Pos{at.leaf, at.index - 1};
  return Pos{at.leaf - 1, leaves_[order_[at.leaf - 1]].count - 1};
}

inline std::uint32_t AddressRanges::leaf_for(Addr addr) const {
  const std::size_t after = flat_lower_bound(first_.data(), first_.size(), [&](Addr first) { return first <= addr; });
  return after == 0 ? 0 : static_cast<std::uint32_t>(after) - 1;
}

inline AddressRanges::Pos AddressRanges::lower_bound(Addr addr) const {
  if (order_.empty()) return end();
  const std::uint32_t at = leaf_for(addr);
  const Leaf& leaf = leaves_[order_[at]];
  const auto index = static_cast<std::uint32_t>(
      flat_lower_bound(leaf.addr.data(), leaf.count, [&](Addr first) { return first < addr; }));
  return index < leaf.count ? Pos{at, index} : Pos{at + 1, 0};
}

}  // namespace allocsim
