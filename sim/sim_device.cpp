#include "sim/sim_device.hpp"

#include <algorithm>

#include "sim/error.hpp"

namespace allocsim {
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
