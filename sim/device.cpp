#include "sim/device.hpp"

namespace allocsim {
namespace {

// Rounds to the nearest nanosecond (costs are never negative, so +0.5 and truncation do).
Nanos scaled(double ns_per_byte, Bytes bytes) {
  return static_cast<Nanos>(ns_per_byte * static_cast<double>(bytes) + 0.5);
}

}  // namespace

Nanos CostModel::malloc_cost(Bytes bytes) const { return malloc_fixed_ns + scaled(malloc_ns_per_byte, bytes); }
Nanos CostModel::free_cost(Bytes bytes) const { return free_fixed_ns + scaled(free_ns_per_byte, bytes); }
Nanos CostModel::copy_cost(Bytes bytes) const { return scaled(1 / copy_bytes_per_ns, bytes); }
Nanos CostModel::map_cost(Bytes bytes) const { return map_fixed_ns + scaled(map_ns_per_byte, bytes); }
Nanos CostModel::unmap_cost(Bytes bytes) const { return unmap_fixed_ns + scaled(unmap_ns_per_byte, bytes); }

}  // namespace allocsim
