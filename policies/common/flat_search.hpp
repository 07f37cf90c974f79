// Binary search over a sorted array without a branch on the comparison: the step is a
// conditional move, so a lookup costs no mispredicted branches (the main cost of
// std::lower_bound on short, randomly probed arrays such as SizeBins' bins and the
// leaves of AddressRanges).
#pragma once

#include <cstddef>

namespace allocsim {

// The first index in [0, n) whose element is not `before` the key, or n.
template <typename T, typename Before>
std::size_t flat_lower_bound(const T* data, std::size_t n, Before before) {
  if (n == 0) return 0;
  const T* base = data;
  while (n > 1) {
    const std::size_t half = n / 2;
    // A multiply, not a ?: : GCC compiles the latter to a branch.
    base += static_cast<std::size_t>(before(base[half - 1])) * half;
    n -= half;
  }
  return static_cast<std::size_t>(base - data) + (before(*base) ? 1 : 0);
}

}  // namespace allocsim
