#include "sim/sim_device.hpp"

#include <algorithm>

#include "sim/error.hpp"

namespace allocsim {
SimDevice::SimDevice(DeviceSpec spec, Contexts contexts) : spec_(std::move(spec)), contexts_(contexts) {
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
  if (contexts_ == Contexts::one_at_construction) stats_.used.add(spec_.context_overhead);
}

bool SimDevice::open_context() {
  if (contexts_ == Contexts::one_at_construction) return true;
  if (spec_.context_overhead > spec_.capacity - stats_.used.current) return false;
  stats_.used.add(spec_.context_overhead);
  return true;
}

void SimDevice::close_context() {
  if (contexts_ == Contexts::per_open) stats_.used.sub(spec_.context_overhead);
}

std::optional<Segment> SimDevice::take(Bytes bytes, const char* call) {
  if (bytes == 0) throw Error("device " + spec_.name + ": " + call + " of 0 bytes (a policy bug)");
  elapsed_ += spec_.cost.malloc_cost(bytes);
  const Bytes charged = charge(bytes);
  if (charged > spec_.capacity - stats_.used.current) {
    ++stats_.failed_mallocs;
    return std::nullopt;
  }
  ++stats_.mallocs;
  stats_.used.add(charged);
  const Segment segment{next_addr_, bytes};
  next_addr_ += align_up(std::max(charged, bytes), kSegmentAlignment);
  return segment;
}

void SimDevice::give_back(Segment segment) {
  elapsed_ += spec_.cost.free_cost(segment.bytes);
  ++stats_.frees;
  stats_.used.sub(charge(segment.bytes));
}

std::optional<Segment> SimDevice::malloc(Bytes bytes) { return take(bytes, "malloc"); }

void SimDevice::free(Segment segment) { give_back(segment); }

// Physical memory takes addresses from the same bump pointer as segments, as names that
// are never reused; nothing is ever read at them.
std::optional<Segment> SimDevice::create_physical(Bytes bytes) {
  auto physical = take(bytes, "create_physical");
  if (physical) stats_.physical.add(charge(bytes));
  return physical;
}

void SimDevice::release_physical(Segment physical) {
  give_back(physical);
  stats_.physical.sub(charge(physical.bytes));
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

void SimDevice::map(Addr, std::span<const Segment> pages) {
  elapsed_ += spec_.cost.map_cost(total_bytes(pages));
  ++stats_.maps;
}

void SimDevice::unmap(Addr, Bytes bytes) {
  elapsed_ += spec_.cost.unmap_cost(bytes);
  ++stats_.unmaps;
}

}  // namespace allocsim
