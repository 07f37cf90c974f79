// Binary search over a sorted array without a branch on the comparison: the step adds the
// half masked by it, so a lookup costs no mispredicted branches (the main cost of
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
    // A mask (all ones where the element is before the key), not a ?: (GCC compiles that
    // to a branch) nor a multiply, whose latency lies on the chain of dependent steps.
    base += half & (std::size_t{0} - static_cast<std::size_t>(before(base[half - 1])));
    n -= half;
  }
  return static_cast<std::size_t>(base - data) + (before(*base) ? 1 : 0);
}

}  // namespace allocsim
