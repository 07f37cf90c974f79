#include "policies/common/free_list.hpp"

#include <string>

#include "sim/error.hpp"

namespace allocsim {

FreeList::FreeList() : by_addr_(&pool_), by_size_(&pool_) {}

void FreeList::erase_size_entry(Range range) { by_size_.erase(by_size_.find({range.size, range.addr})); }

// Iterators and node handles throughout: a request costs a few tree walks and no
// allocation, which is what keeps best fit fast on long traces.
void FreeList::add(Range range) {
  auto next = by_addr_.lower_bound(range.addr);
  if (next != by_addr_.end() && next->first == range.end()) {
    erase_size_entry({next->first, next->second});
    range.size += next->second;
    total_ -= next->second;
    next = by_addr_.erase(next);
  }
  if (next != by_addr_.begin()) {
    const auto prev = std::prev(next);
    if (prev->first + prev->second == range.addr) {
      erase_size_entry({prev->first, prev->second});
      prev->second += range.size;  // grow the left neighbour in place
      by_size_.emplace(prev->second, prev->first);
      total_ += range.size;
      return;
    }
  }
  by_addr_.emplace_hint(next, range.addr, range.size);
  by_size_.emplace(range.size, range.addr);
  total_ += range.size;
}

void FreeList::take_front(Range range, Bytes size) {
  const auto found = by_addr_.find(range.addr);
  if (found == by_addr_.end() || found->second != range.size || size > range.size) {
    throw Error("free list: cannot take " + std::to_string(size) + " bytes of a free range of " +
                std::to_string(range.size) + " at " + std::to_string(range.addr));
  }
  auto by_size = by_size_.extract(by_size_.find({range.size, range.addr}));
  total_ -= size;
  if (size == range.size) {
    by_addr_.erase(found);
    return;
  }
  // The rest keeps its place in address order: move the nodes, don't reallocate them.
  const auto hint = std::next(found);
  auto by_addr = by_addr_.extract(found);
  by_addr.key() += size;
  by_addr.mapped() -= size;
  by_addr_.insert(hint, std::move(by_addr));
  by_size.value() = {range.size - size, range.addr + size};
  by_size_.insert(std::move(by_size));
}

void FreeList::remove(Range range) { take_front(range, range.size); }

void FreeList::clear() {
  by_addr_.clear();
  by_size_.clear();
  total_ = 0;
}

std::optional<Range> FreeList::best_fit(Bytes size) const {
  const auto found = by_size_.lower_bound({size, 0});
  if (found == by_size_.end()) return std::nullopt;
  return Range{found->second, found->first};
}

std::optional<Range> FreeList::first_fit(Bytes size) const {
  for (const auto& [addr, range_size] : by_addr_) {
    if (range_size >= size) return Range{addr, range_size};
  }
  return std::nullopt;
}

std::optional<Range> FreeList::next_fit(Bytes size, Addr from) const {
  const auto start = by_addr_.lower_bound(from);
  for (auto it = start; it != by_addr_.end(); ++it) {
    if (it->second >= size) return Range{it->first, it->second};
  }
  for (auto it = by_addr_.begin(); it != start; ++it) {
    if (it->second >= size) return Range{it->first, it->second};
  }
  return std::nullopt;
}

std::optional<Range> FreeList::worst_fit(Bytes size) const {
  if (by_size_.empty() || largest() < size) return std::nullopt;
  const auto found = by_size_.lower_bound({largest(), 0});
  return Range{found->second, found->first};
}

void FreeList::check() const {
  if (by_addr_.size() != by_size_.size()) throw Error("free list: indexes disagree on the count");
  Bytes total = 0;
  Addr previous_end = 0;
  bool first = true;
  for (const auto& [addr, size] : by_addr_) {
    if (size == 0) throw Error("free list: empty range at " + std::to_string(addr));
    if (!by_size_.contains({size, addr})) throw Error("free list: size index lacks " + std::to_string(addr));
    if (!first && addr <= previous_end) {
      throw Error("free list: range at " + std::to_string(addr) + (addr == previous_end ? " touches" : " overlaps") +
                  " the one before");
    }
    first = false;
    previous_end = addr + size;
    total += size;
  }
  if (total != total_) throw Error("free list: total is off");
}

}  // namespace allocsim
