#include "real_gpu/cuda_device.hpp"

#include <chrono>

#include "sim/error.hpp"

namespace allocsim {
namespace {

Nanos since(std::chrono::steady_clock::time_point start) {
  return static_cast<Nanos>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start).count());
}

}  // namespace

std::string_view name_of(DeviceOp op) {
  switch (op) {
    case DeviceOp::malloc:
      return "malloc";
    case DeviceOp::free:
      return "free";
    case DeviceOp::failed_malloc:
      return "failed_malloc";
    case DeviceOp::copy:
      return "copy";
  }
  return "?";
}

CudaDevice::CudaDevice(DeviceApi& api, CudaDeviceOptions options) : api_(api), options_(options) {
  if (options_.granularity == 0) throw Error("device granularity must be at least 1 byte");
  if (options_.source == SegmentSource::vmm) {
    page_ = api_.map_granularity();
    if (page_ == 0) throw Error(api_.name() + " has no VMM API (cuMemCreate/cuMemMap)");
  }
  const MemInfo before = api_.mem_get_info();
  capacity_ = before.total;
  if (options_.cap != 0) {
    const Bytes in_use = before.total - before.free;
    if (options_.cap > before.total) {
      throw Error("--cap " + format_bytes(options_.cap) + " exceeds the card's " + format_bytes(before.total));
    }
    if (options_.cap <= in_use) {
      throw Error("--cap " + format_bytes(options_.cap) + " is no more than the " + format_bytes(in_use) +
                  " already in use on " + api_.name());
    }
    if (const Bytes ballast_bytes = before.total - options_.cap; ballast_bytes > 0) {
      ballast_ = api_.malloc(ballast_bytes);
      if (!ballast_) {
        throw Error("--cap " + format_bytes(options_.cap) + ": the ballast of " + format_bytes(ballast_bytes) +
                    " does not fit; " + format_bytes(before.free) + " free of " + format_bytes(before.total));
      }
      ballast_charged_ = before.free - api_.mem_get_info().free;
    }
    capacity_ = options_.cap;
  }
}

CudaDevice::~CudaDevice() {
  if (ballast_) api_.free(*ballast_);
}

Bytes CudaDevice::used() const {
  const MemInfo info = api_.mem_get_info();
  return info.total - info.free - ballast_charged_;
}

std::optional<Segment> CudaDevice::malloc(Bytes bytes) {
  if (bytes == 0) throw Error("device " + api_.name() + ": malloc of 0 bytes (a policy bug)");
  const Bytes asked = options_.source == SegmentSource::vmm ? align_up(bytes, page_) : bytes;
  const auto start = std::chrono::steady_clock::now();
  const std::optional<Addr> addr = options_.source == SegmentSource::vmm ? api_.map(asked) : api_.malloc(asked);
  const Nanos ns = since(start);
  elapsed_ += ns;
  if (!addr) {
    calls_.push_back({DeviceOp::failed_malloc, bytes, ns});
    return std::nullopt;
  }
  calls_.push_back({DeviceOp::malloc, bytes, ns});
  if (options_.touch) {
    api_.touch(*addr, asked);
    api_.synchronize();  // so no later call's time includes this write
  }
  return Segment{*addr, bytes};
}

void CudaDevice::free(Segment segment) {
  const auto start = std::chrono::steady_clock::now();
  if (options_.source == SegmentSource::vmm) {
    api_.unmap(segment.addr, align_up(segment.bytes, page_));
  } else {
    api_.free(segment.addr);
  }
  const Nanos ns = since(start);
  elapsed_ += ns;
  calls_.push_back({DeviceOp::free, segment.bytes, ns});
}

void CudaDevice::copy(Addr dst, Addr src, Bytes bytes) {
  const auto start = std::chrono::steady_clock::now();
  api_.copy(dst, src, bytes);
  api_.synchronize();  // a device-to-device cudaMemcpy returns before the copy is done
  const Nanos ns = since(start);
  elapsed_ += ns;
  calls_.push_back({DeviceOp::copy, bytes, ns});
}

DeviceSpec CudaDevice::mirror(const CostModel& cost) const {
  DeviceSpec spec;
  spec.name = api_.name();
  spec.capacity = capacity_;
  spec.context_overhead = used();
  spec.granularity = options_.granularity;
  spec.compute_capability = api_.compute_capability();
  spec.cost = cost;
  return spec;
}

}  // namespace allocsim
