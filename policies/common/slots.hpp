// Records in a vector, addressed by 32-bit handles that stay valid while others come and
// go: a removed slot is reused by the next add. Chunks of BFC and blocks of the caching
// allocator live in these, so splitting and merging allocate nothing in steady state.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/slot_numbers.hpp"

namespace allocsim {

template <typename T>
class Slots {
 public:
  std::uint32_t add(const T& value) {
    const std::uint32_t handle = numbers_.take();
    if (handle == items_.size()) {
      items_.push_back(value);
    } else {
      items_[handle] = value;
    }
    return handle;
  }
  void remove(std::uint32_t handle) { numbers_.give_back(handle); }

  T& operator[](std::uint32_t handle) { return items_[handle]; }
  const T& operator[](std::uint32_t handle) const { return items_[handle]; }
  // Slots ever made, removed ones included: callers mark what they remove.
  std::uint32_t extent() const { return static_cast<std::uint32_t>(items_.size()); }

 private:
  std::vector<T> items_;
  SlotNumbers numbers_;
};

// Records that tile a device segment, each linked to its physical neighbours: `T` has
// ptr, size, prev and next (kNoNeighbour at the segment's ends). BFC's chunks and the
// caching allocator's blocks split and merge through these two.
inline constexpr std::uint32_t kNoNeighbour = ~std::uint32_t{0};

// Cuts record `handle` after `head` bytes; the tail becomes a new record made from `tail`
// (whose place and links are set here), and its handle is returned.
template <typename T>
inline std::uint32_t split_after(Slots<T>& slots, std::uint32_t handle, std::uint64_t head, T tail) {
  tail.ptr = slots[handle].ptr + head;
  tail.size = slots[handle].size - head;
  tail.prev = handle;
  tail.next = slots[handle].next;
  const std::uint32_t added = slots.add(tail);
  if (slots[added].next != kNoNeighbour) slots[slots[added].next].prev = added;
  slots[handle].next = added;
  slots[handle].size = head;
  return added;
}

// Grows `left` over `right`, its next neighbour, and unlinks `right`; the caller frees
// right's slot.
template <typename T>
void merge_next(Slots<T>& slots, std::uint32_t left, std::uint32_t right) {
  slots[left].size += slots[right].size;
  slots[left].next = slots[right].next;
  if (slots[left].next != kNoNeighbour) slots[slots[left].next].prev = left;
}

}  // namespace allocsim
