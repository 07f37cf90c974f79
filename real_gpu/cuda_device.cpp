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
    case DeviceOp::map:
      return "map";
    case DeviceOp::unmap:
      return "unmap";
  }
  return "?";
}

CudaDevice::CudaDevice(DeviceApi& api, CudaDeviceOptions options) : api_(api), options_(options) {
  if (options_.granularity == 0) throw Error("device granularity must be at least 1 byte");
  page_ = api_.map_granularity();
  if (options_.source == SegmentSource::vmm) need_pages(page_, "--segments vmm");
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

template <typename Call>
Nanos CudaDevice::timed(Call call) {
  const auto start = std::chrono::steady_clock::now();
  call();
  const Nanos ns = since(start);
  elapsed_ += ns;
  return ns;
}

void CudaDevice::need_pages(Bytes bytes, const char* what) const {
  if (page_ == 0) throw Error(api_.name() + " has no VMM API (cuMemCreate/cuMemMap)");
  if (bytes == 0 || bytes % page_ != 0) {
    throw Error(std::string(what) + ": " + format_bytes(bytes) + " is not whole VMM pages of " +
                format_bytes(page_) + " on " + api_.name());
  }
}

// With --segments vmm a segment is one physical allocation mapped at its own range.
std::optional<Segment> CudaDevice::malloc(Bytes bytes) {
  if (bytes == 0) throw Error("device " + api_.name() + ": malloc of 0 bytes (a policy bug)");
  const bool vmm = options_.source == SegmentSource::vmm;
  const Bytes asked = vmm ? align_up(bytes, page_) : bytes;
  std::optional<Addr> addr;
  std::optional<Segment> physical;
  const Nanos ns = timed([&] {
    if (!vmm) {
      addr = api_.malloc(asked);
      return;
    }
    physical = api_.create_physical(asked);
    if (!physical) return;
    addr = api_.reserve_addresses(asked);
    api_.map(*addr, std::span(&*physical, 1));
  });
  if (!addr) {
    calls_.push_back({DeviceOp::failed_malloc, bytes, ns});
    return std::nullopt;
  }
  calls_.push_back({DeviceOp::malloc, bytes, ns});
  if (physical) vmm_segments_.emplace(*addr, physical->addr);
  if (options_.touch) {
    api_.touch(*addr, asked);
    api_.synchronize();  // so no later call's time includes this write
  }
  return Segment{*addr, bytes};
}

void CudaDevice::free(Segment segment) {
  const Nanos ns = timed([&] {
    if (options_.source != SegmentSource::vmm) {
      api_.free(segment.addr);
      return;
    }
    const auto found = vmm_segments_.find(segment.addr);
    if (found == vmm_segments_.end()) throw Error("free of a segment this device did not make");
    const Bytes bytes = align_up(segment.bytes, page_);
    api_.unmap(segment.addr, bytes);
    api_.release_physical(Segment{found->second, bytes});
    api_.release_addresses(segment.addr, bytes);
    vmm_segments_.erase(found);
  });
  calls_.push_back({DeviceOp::free, segment.bytes, ns});
}

// A policy's range is rounded up to whole pages: the rest of the last page stays unused.
Addr CudaDevice::reserve_addresses(Bytes bytes) {
  need_pages(page_, "reserve_addresses");
  Addr at = 0;
  timed([&] { at = api_.reserve_addresses(align_up(bytes, page_)); });
  return at;
}

void CudaDevice::release_addresses(Addr at, Bytes bytes) {
  timed([&] { api_.release_addresses(at, align_up(bytes, page_)); });
}

std::optional<Segment> CudaDevice::create_physical(Bytes bytes) {
  need_pages(bytes, "create_physical");
  std::optional<Segment> physical;
  const Nanos ns = timed([&] { physical = api_.create_physical(bytes); });
  calls_.push_back({physical ? DeviceOp::malloc : DeviceOp::failed_malloc, bytes, ns});
  return physical;
}

void CudaDevice::release_physical(Segment physical) {
  const Nanos ns = timed([&] { api_.release_physical(physical); });
  calls_.push_back({DeviceOp::free, physical.bytes, ns});
}

void CudaDevice::map(Addr at, std::span<const Segment> pages) {
  const Bytes bytes = total_bytes(pages);
  need_pages(at, "map at an address");
  const Nanos ns = timed([&] { api_.map(at, pages); });
  calls_.push_back({DeviceOp::map, bytes, ns});
  if (options_.touch) {
    api_.touch(at, bytes);
    api_.synchronize();
  }
}

void CudaDevice::unmap(Addr at, Bytes bytes) {
  const Nanos ns = timed([&] { api_.unmap(at, bytes); });
  calls_.push_back({DeviceOp::unmap, bytes, ns});
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
