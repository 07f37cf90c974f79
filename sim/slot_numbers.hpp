// Slot numbers 0, 1, 2, ... taken and given back; the number given back last is the next
// one taken (last in, first out), so the numbers in use stay as few as the most ever in
// use at once. The one free list of the project: the engine keeps live blocks in these
// slots, readers and writers renumber allocation ids by them, and policies keep records
// under them (policies/common/slots.hpp).
#pragma once

#include <cstdint>
#include <vector>

namespace allocsim {

class SlotNumbers {
 public:
  // A slot given back, or the next new one (then == extent() - 1).
  std::uint32_t take() {
    if (spare_.empty()) return extent_++;
    const std::uint32_t slot = spare_.back();
    spare_.pop_back();
    return slot;
  }
  void give_back(std::uint32_t slot) { spare_.push_back(slot); }
  // Slots ever taken: one past the largest.
  std::uint32_t extent() const { return extent_; }
  void clear() {
    extent_ = 0;
    spare_ = {};
  }

 private:
  std::uint32_t extent_ = 0;
  std::vector<std::uint32_t> spare_;
};

}  // namespace allocsim
