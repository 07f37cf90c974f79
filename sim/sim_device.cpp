#include "sim/sim_device.hpp"

#include <algorithm>

#include "sim/error.hpp"

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

SimDevice::SimDevice(DeviceSpec spec) : spec_(std::move(spec)), used_(spec_.context_overhead) {
  if (spec_.granularity == 0) throw Error("device " + spec_.name + ": granularity must be at least 1 byte");
  if (spec_.granularity > spec_.capacity) {
    throw Error("device " + spec_.name + ": granularity " + format_bytes(spec_.granularity) + " exceeds capacity " +
                format_bytes(spec_.capacity));
  }
  if (spec_.context_overhead > spec_.capacity) {
    throw Error("device " + spec_.name + ": context overhead " + format_bytes(spec_.context_overhead) +
                " exceeds capacity " + format_bytes(spec_.capacity));
  }
  if (!(spec_.cost.copy_bytes_per_ns > 0)) throw Error("device " + spec_.name + ": copy bandwidth must be positive");
  stats_.peak_used = used_;
}

std::optional<Segment> SimDevice::malloc(Bytes bytes) {
  if (bytes == 0) throw Error("device " + spec_.name + ": malloc of 0 bytes (a policy bug)");
  elapsed_ += spec_.cost.malloc_cost(bytes);
  const Bytes charged = charge(bytes);
  if (charged > spec_.capacity - used_) {
    ++stats_.failed_mallocs;
    return std::nullopt;
  }
  ++stats_.mallocs;
  used_ += charged;
  stats_.peak_used = std::max(stats_.peak_used, used_);
  const Segment segment{next_addr_, bytes};
  next_addr_ += align_up(std::max(charged, bytes), kSegmentAlignment);
  return segment;
}

void SimDevice::free(Segment segment) {
  elapsed_ += spec_.cost.free_cost(segment.bytes);
  ++stats_.frees;
  used_ -= charge(segment.bytes);
}

void SimDevice::copy(Addr, Addr, Bytes bytes) {
  elapsed_ += spec_.cost.copy_cost(bytes);
  stats_.bytes_copied += bytes;
}

Addr SimDevice::reserve_addresses(Bytes bytes) {
  const Addr addr = next_addr_;
  next_addr_ += align_up(std::max<Bytes>(bytes, 1), kSegmentAlignment);
  return addr;
}

void SimDevice::map(Bytes bytes) {
  elapsed_ += spec_.cost.map_cost(bytes);
  ++stats_.maps;
}

void SimDevice::unmap(Bytes bytes) {
  elapsed_ += spec_.cost.unmap_cost(bytes);
  ++stats_.unmaps;
}

}  // namespace allocsim
