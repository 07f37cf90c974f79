// Records in a vector, addressed by 32-bit handles that stay valid while others come and
// go: a removed slot is reused by the next add. Chunks of BFC and blocks of the caching
// allocator live in these, so splitting and merging allocate nothing in steady state.
#pragma once

#include <cstdint>
#include <vector>

namespace allocsim {

template <typename T>
class Slots {
 public:
  std::uint32_t add(const T& value) {
    if (spare_.empty()) {
      items_.push_back(value);
      return static_cast<std::uint32_t>(items_.size() - 1);
    }
    const std::uint32_t handle = spare_.back();
    spare_.pop_back();
    items_[handle] = value;
    return handle;
  }
  void remove(std::uint32_t handle) { spare_.push_back(handle); }

  T& operator[](std::uint32_t handle) { return items_[handle]; }
  const T& operator[](std::uint32_t handle) const { return items_[handle]; }
  // Slots ever made, removed ones included: callers mark what they remove.
  std::uint32_t extent() const { return static_cast<std::uint32_t>(items_.size()); }

 private:
  std::vector<T> items_;
  std::vector<std::uint32_t> spare_;
};

}  // namespace allocsim
