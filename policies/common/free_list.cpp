#include "policies/common/free_list.hpp"

#include <algorithm>
#include <string>

#include "sim/error.hpp"

namespace allocsim {

FreeList::FreeList(Orders orders) : sized_(orders == Orders::address_and_size) {}

void FreeList::need_size_order(const char* fit) const {
  if (!sized_) throw Error(std::string("free list: a ") + fit + " fit needs the size order, which this list does not keep");
}

Bytes FreeList::largest() const {
  if (!sized_) return by_addr_.largest();
  return by_size_.empty() ? 0 : by_size_.back().size;
}

void FreeList::add(Range range) {
  total_ += range.size;
  // A neighbour joins unless a boundary lies between them: at its start when it follows.
  const auto joins = [&](Range neighbour) { return !apart_at(std::max(neighbour.addr, range.addr)); };
  const auto absorbed = [&](Range neighbour) {
    if (sized_) by_size_.erase(neighbour.size, neighbour.addr);
  };
  const Range merged = by_addr_.add_merging(range, joins, absorbed);
  if (sized_) by_size_.insert({merged.size, merged.addr, 0});
}

bool FreeList::apart_at(Addr addr) const {
  return apart_at_ != nullptr && std::binary_search(apart_at_->begin(), apart_at_->end(), addr);
}

bool FreeList::contains(Range range) const {
  const AddressRanges::Pos found = by_addr_.lower_bound(range.addr);
  return found != by_addr_.end() && by_addr_[found] == range;
}

void FreeList::take_front(Range range, Bytes size) {
  const AddressRanges::Pos found = by_addr_.lower_bound(range.addr);
  if (found == by_addr_.end() || by_addr_[found] != range || size > range.size) {
    throw Error("free list: cannot take " + std::to_string(size) + " bytes of a free range of " +
                std::to_string(range.size) + " at " + std::to_string(range.addr));
  }
  if (sized_) by_size_.erase(range.size, range.addr);
  take_rest(found, range, size);
}

// Each fit searches once, in one of these; the const fit reads what it found, the take_
// fit takes from it.
SizeBins::Cursor FreeList::worst_fit_at(Bytes size) const {
  need_size_order("worst");
  if (by_size_.empty() || largest() < size) return SizeBins::end();
  return by_size_.lower_bound(largest());
}

AddressRanges::Pos FreeList::next_fit_at(Bytes size, Addr from) const {
  const AddressRanges::Pos found = by_addr_.first_fit_at(size, from);
  if (found != by_addr_.end()) return found;
  return by_addr_.first_fit_at(size, 0);  // wrapped: whatever it finds lies before `from`
}

std::optional<Range> FreeList::range_at(SizeBins::Cursor by_size) const {
  if (by_size == SizeBins::end()) return std::nullopt;
  return Range{by_size_[by_size].addr, by_size_[by_size].size};
}

std::optional<Range> FreeList::range_at(AddressRanges::Pos by_addr) const {
  if (by_addr == by_addr_.end()) return std::nullopt;
  return by_addr_[by_addr];
}

std::optional<Range> FreeList::take_best_fit(Bytes size) {
  need_size_order("best");
  return take_at(by_size_.lower_bound(size), size);
}

std::optional<Range> FreeList::take_worst_fit(Bytes size) { return take_at(worst_fit_at(size), size); }

std::optional<Range> FreeList::take_at(SizeBins::Cursor by_size, Bytes size) {
  if (by_size == SizeBins::end()) return std::nullopt;
  const Range range{by_size_[by_size].addr, by_size_[by_size].size};
  by_size_.erase(by_size);
  take_rest(by_addr_.lower_bound(range.addr), range, size);
  return range;
}

std::optional<Range> FreeList::take_first_fit(Bytes size) { return take_at(by_addr_.first_fit_at(size, 0), size); }

std::optional<Range> FreeList::take_next_fit(Bytes size, Addr from) { return take_at(next_fit_at(size, from), size); }

std::optional<Range> FreeList::take_at(AddressRanges::Pos by_addr, Bytes size) {
  if (by_addr == by_addr_.end()) return std::nullopt;
  const Range range = by_addr_[by_addr];
  if (sized_) by_size_.erase(range.size, range.addr);
  take_rest(by_addr, range, size);
  return range;
}

void FreeList::take_rest(AddressRanges::Pos by_addr, Range range, Bytes size) {
  total_ -= size;
  if (size == range.size) {
    by_addr_.erase(by_addr);
    return;
  }
  // The rest keeps its place in address order.
  by_addr_.set(by_addr, Range{range.addr + size, range.size - size});
  if (sized_) by_size_.insert({range.size - size, range.addr + size, 0});
}

void FreeList::remove(Range range) { take_front(range, range.size); }

void FreeList::clear() {
  by_addr_.clear();
  by_size_.clear();
  total_ = 0;
}

std::optional<Range> FreeList::best_fit(Bytes size) const {
  need_size_order("best");
  return range_at(by_size_.lower_bound(size));
}

std::optional<Range> FreeList::first_fit(Bytes size) const { return range_at(by_addr_.first_fit_at(size, 0)); }

std::optional<Range> FreeList::next_fit(Bytes size, Addr from) const { return range_at(next_fit_at(size, from)); }

std::optional<Range> FreeList::worst_fit(Bytes size) const { return range_at(worst_fit_at(size)); }

void FreeList::check() const {
  by_addr_.check();
  by_size_.check();
  if (sized_ && by_addr_.size() != by_size_.size()) throw Error("free list: indexes disagree on the count");
  Bytes total = 0;
  Addr previous_end = 0;
  bool first = true;
  by_addr_.for_each([&](Range range) {
    const Addr addr = range.addr;
    if (range.size == 0) throw Error("free list: empty range at " + std::to_string(addr));
    if (sized_ && !by_size_.contains(range.size, addr)) throw Error("free list: size index lacks " + std::to_string(addr));
    if (!first && (addr < previous_end || (addr == previous_end && !apart_at(addr)))) {
      throw Error("free list: range at " + std::to_string(addr) + (addr == previous_end ? " touches" : " overlaps") +
                  " the one before");
    }
    first = false;
    previous_end = addr + range.size;
    total += range.size;
  });
  if (total != total_) throw Error("free list: total is off");
}

}  // namespace allocsim
