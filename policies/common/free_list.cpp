#include "policies/common/free_list.hpp"

#include <string>

#include "sim/error.hpp"

namespace allocsim {

FreeList::FreeList() : by_addr_(&pool_), by_size_(&pool_) {}

void FreeList::insert(Range range) {
  by_addr_.emplace(range.addr, range.size);
  by_size_.emplace(range.size, range.addr);
  total_ += range.size;
}

void FreeList::erase(Range range) {
  by_addr_.erase(range.addr);
  by_size_.erase({range.size, range.addr});
  total_ -= range.size;
}

void FreeList::add(Range range) {
  auto next = by_addr_.lower_bound(range.addr);
  if (next != by_addr_.end() && next->first == range.end()) {
    const Range right{next->first, next->second};
    ++next;
    erase(right);
    range.size += right.size;
  }
  if (next != by_addr_.begin()) {
    const auto prev = std::prev(next);
    if (prev->first + prev->second == range.addr) {
      const Range left{prev->first, prev->second};
      erase(left);
      range = Range{left.addr, left.size + range.size};
    }
  }
  insert(range);
}

void FreeList::remove(Range range) {
  const auto found = by_addr_.find(range.addr);
  if (found == by_addr_.end() || found->second != range.size) {
    throw Error("free list: no free range of " + std::to_string(range.size) + " bytes at " + std::to_string(range.addr));
  }
  erase(range);
}

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
