// A coalescing free list: free address ranges indexed by address (to find neighbours)
// and by (size, address) (to find the best fit). The building block of best fit, BFC's
// placement, compaction and first fit.
#pragma once

#include <cstddef>
#include <map>
#include <memory_resource>
#include <optional>
#include <set>
#include <utility>

#include "sim/units.hpp"

namespace allocsim {

struct Range {
  Addr addr;
  Bytes size;
  Addr end() const { return addr + size; }
  friend bool operator==(const Range&, const Range&) = default;
};

// Contract: ranges never overlap; add() merges a range with free neighbours that touch
// it, so no two ranges in the list are adjacent. Ranges of different device segments
// must not touch, or keep one list per segment: adjacency is all it knows.
class FreeList {
 public:
  FreeList();
  FreeList(const FreeList&) = delete;
  FreeList& operator=(const FreeList&) = delete;

  void add(Range range);     // coalesces; returns nothing because the merged range is rarely needed
  void remove(Range range);  // exactly a range in the list
  // Takes the first `size` bytes of a range in the list; the rest stays free.
  void take_front(Range range, Bytes size);
  void clear();

  // The smallest range of at least `size` bytes, the lowest address among equals.
  std::optional<Range> best_fit(Bytes size) const;
  // The lowest-addressed range of at least `size` bytes (a scan: O(ranges)).
  std::optional<Range> first_fit(Bytes size) const;
  // The first fitting range at or after `from`, wrapping around to the lowest address.
  std::optional<Range> next_fit(Bytes size, Addr from) const;
  // The largest range if it fits, the lowest address among equals.
  std::optional<Range> worst_fit(Bytes size) const;
  // The highest-addressed range, if any (where a growing arena ends).
  std::optional<Range> last() const {
    if (by_addr_.empty()) return std::nullopt;
    return Range{by_addr_.rbegin()->first, by_addr_.rbegin()->second};
  }

  Bytes total() const { return total_; }
  Bytes largest() const { return by_size_.empty() ? 0 : by_size_.rbegin()->first; }
  std::size_t count() const { return by_addr_.size(); }
  template <typename Visit>
  void for_each(Visit visit) const {
    for (const auto& [addr, size] : by_addr_) visit(Range{addr, size});
  }

  void check() const;  // both indexes agree, nothing overlaps or touches, the total adds up

 private:
  void erase_size_entry(Range range);

  // Tree nodes come from a pool so that a steady state allocates nothing per request.
  std::pmr::unsynchronized_pool_resource pool_;
  std::pmr::map<Addr, Bytes> by_addr_;
  std::pmr::set<std::pair<Bytes, Addr>> by_size_;
  Bytes total_ = 0;
};

}  // namespace allocsim
