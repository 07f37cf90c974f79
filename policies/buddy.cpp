#include "policies/buddy.hpp"

#include <algorithm>
#include <bit>
#include <functional>
#include <string>

#include "sim/error.hpp"

namespace allocsim {

BuddyPolicy::Settings BuddyPolicy::settings(const Params& params) {
  const Settings settings{.region = params.bytes("region"), .min_block = params.bytes("min_block")};
  if (settings.min_block < kBlockAlignment || !std::has_single_bit(settings.min_block)) {
    throw Error("policy buddy: min_block=" + format_bytes(settings.min_block) + " is not a power of two >= 256 B");
  }
  return settings;
}

BuddyPolicy::BuddyPolicy(const Settings& settings, Device& device)
    : device_(device), region_bytes_(settings.region), min_block_(settings.min_block) {}

BuddyPolicy::~BuddyPolicy() {
  if (region_) device_.free(*region_);
}

std::size_t BuddyPolicy::order_of(Bytes size) const {
  const Bytes block = std::bit_ceil(std::max(size, min_block_));
  return static_cast<std::size_t>(std::countr_zero(block) - std::countr_zero(min_block_));
}

bool BuddyPolicy::acquire_region() {
  const Bytes wanted = region_bytes_ != 0 ? region_bytes_ : device_.available();
  if (wanted < min_block_) return false;
  const Bytes bytes = std::bit_floor(wanted);
  region_ = device_.malloc(bytes);
  if (!region_) return false;
  // The device promises 512-byte alignment; buddies are paired relative to the base.
  base_ = region_->addr;
  top_order_ = order_of(bytes);
  free_.assign(top_order_ + 1, {});
  free_[top_order_].push_back(base_);
  return true;
}

inline void BuddyPolicy::insert_free(std::size_t order, Addr addr) {
  std::vector<Addr>& free = free_[order];
  free.insert(std::lower_bound(free.begin(), free.end(), addr, std::greater<>()), addr);
}

Allocation BuddyPolicy::allocate(const Request& request) {
  if (!region_ && !acquire_region()) return std::nullopt;
  const Bytes wanted = std::max<Bytes>(request.bytes, 1);
  if (wanted > size_of(top_order_)) return std::nullopt;
  const std::size_t order = order_of(wanted);
  std::size_t found = order;
  while (found <= top_order_ && free_[found].empty()) ++found;
  if (found > top_order_) return std::nullopt;
  const Addr addr = free_[found].back();
  free_[found].pop_back();
  while (found > order) {  // halve, keeping the lower half, freeing the upper
    --found;
    insert_free(found, addr + size_of(found));
  }
  allocated_ += size_of(order);
  return Block{addr, size_of(order), request.bytes, request.id, request.stream};
}

void BuddyPolicy::deallocate(const Block& block, Nanos) {
  std::size_t order = order_of(block.size);
  Addr addr = block.addr;
  allocated_ -= block.size;
  for (; order < top_order_; ++order) {
    std::vector<Addr>& free = free_[order];
    const Addr buddy = base_ + ((addr - base_) ^ size_of(order));
    const auto at = std::lower_bound(free.begin(), free.end(), buddy, std::greater<>());
    if (at == free.end() || *at != buddy) {
      // No block of this order lies between a block and its buddy, so where the buddy would
      // be in the list is where the block goes: one search, not two.
      free.insert(at, addr);
      return;
    }
    free.erase(at);
    addr = std::min(addr, buddy);
  }
  insert_free(order, addr);
}

PolicyStats BuddyPolicy::stats() const {
  const Bytes reserved = region_ ? region_->bytes : 0;
  Bytes largest = 0;
  for (std::size_t order = 0; order < free_.size(); ++order) {
    if (!free_[order].empty()) largest = size_of(order);
  }
  return PolicyStats{.allocated = allocated_,
                     .reserved = reserved,
                     .largest_free = largest};
}

PolicyInspection BuddyPolicy::inspect(Detail) const {
  return PolicyInspection{allocated_ == 0 && region_ ? region_->bytes : 0, {}, {}};
}

void BuddyPolicy::release_cached() {
  if (!region_ || allocated_ != 0) return;
  device_.free(*region_);
  region_.reset();
  free_.clear();
}

void BuddyPolicy::check() const {
  if (!region_) return;
  Bytes free_bytes = 0;
  for (std::size_t order = 0; order < free_.size(); ++order) {
    for (const Addr addr : free_[order]) {
      if ((addr - base_) % size_of(order) != 0) throw Error("buddy: a free block off its boundary");
      if (addr + size_of(order) > base_ + region_->bytes) throw Error("buddy: a free block past the region");
      const Addr buddy = base_ + ((addr - base_) ^ size_of(order));
      if (order < top_order_ && std::binary_search(free_[order].begin(), free_[order].end(), buddy, std::greater<>())) {
        throw Error("buddy: two free buddies left unmerged");
      }
      free_bytes += size_of(order);
    }
  }
  if (free_bytes + allocated_ != region_->bytes) throw Error("buddy: free + allocated != region");
  for (const std::vector<Addr>& free : free_) {
    if (std::adjacent_find(free.begin(), free.end(), std::less_equal<>()) != free.end()) {
      throw Error("buddy: a free list out of order");
    }
  }
}

}  // namespace allocsim
