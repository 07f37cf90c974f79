// What an allocator asks of the driver. All device contact of a policy goes through
// this interface, so one policy object runs on SimDevice and on a real GPU alike.
#pragma once

#include <optional>
#include <string>

#include "sim/error.hpp"
#include "sim/units.hpp"

namespace allocsim {

// Latency of driver calls as fixed + per-byte. The defaults are round placeholders of the
// right order for cudaMalloc/cudaFree on a datacenter GPU; `allocsim calibrate` is where
// measured ones come from.
struct CostModel {
  Nanos malloc_fixed_ns = 10'000;
  double malloc_ns_per_byte = 1e-4;  // 0.1 ms per GiB
  Nanos free_fixed_ns = 5'000;
  double free_ns_per_byte = 5e-5;
  double copy_bytes_per_ns = 1000;  // 1 TB/s device-to-device
  Nanos map_fixed_ns = 5'000;        // cuMemMap + cuMemSetAccess, per call
  double map_ns_per_byte = 2e-6;     // about 4 us per 2 MiB page
  Nanos unmap_fixed_ns = 5'000;
  double unmap_ns_per_byte = 2e-6;

  Nanos malloc_cost(Bytes bytes) const;
  Nanos free_cost(Bytes bytes) const;
  Nanos copy_cost(Bytes bytes) const;
  Nanos map_cost(Bytes bytes) const;
  Nanos unmap_cost(Bytes bytes) const;
};

struct DeviceSpec {
  std::string name = "sim";
  Bytes capacity = 16_GiB;        // total memory, as cudaMemGetInfo reports it
  Bytes context_overhead = 0;     // taken by the CUDA context before any allocation
  Bytes granularity = 1;          // a malloc is charged whole pages of this size
  int compute_capability = 90;    // a plain device counts as a current (sm_90) card
  CostModel cost;
};

// Device allocations are at least this aligned, as cudaMalloc's are.
constexpr Bytes kSegmentAlignment = 512;

struct Segment {
  Addr addr;
  Bytes bytes;
};

// Contract:
// - malloc(bytes), bytes > 0, returns a segment of exactly `bytes`, aligned to kSegmentAlignment, or
//   nullopt when it does not fit; running out of memory is never an exception.
// - free(segment) takes back a segment that malloc returned, exactly once.
// - copy(dst, src, bytes) moves live data inside the device (compaction); both ranges lie
//   in segments this caller holds.
// - used() counts every byte gone from the device: context, other tenants, page rounding.
// - reserve_addresses, map and unmap model CUDA's virtual memory API (cuMemAddressReserve,
//   cuMemMap, cuMemUnmap) for page-mapping policies: physical pages are segments from
//   malloc; map/unmap move no memory, they cost time. A device without it throws.
// - elapsed() is the time spent in device calls so far (simulated, or measured).
class Device {
 public:
  virtual ~Device() = default;
  virtual std::optional<Segment> malloc(Bytes bytes) = 0;
  virtual void free(Segment segment) = 0;
  virtual void copy(Addr dst, Addr src, Bytes bytes) = 0;
  virtual Bytes capacity() const = 0;
  virtual Bytes used() const = 0;
  virtual Bytes granularity() const = 0;
  virtual Nanos elapsed() const = 0;
  // A range of `bytes` virtual addresses no segment will ever use; no memory behind it.
  virtual Addr reserve_addresses(Bytes) { throw Error("this device has no virtual memory API"); }
  virtual void map(Bytes) { throw Error("this device has no virtual memory API"); }    // bytes of pages mapped
  virtual void unmap(Bytes) { throw Error("this device has no virtual memory API"); }  // bytes of pages unmapped
  // major * 10 + minor (90 for sm_90): TensorFlow's memory reserve depends on it.
  virtual int compute_capability() const = 0;

  // What cudaMemGetInfo would call free.
  Bytes available() const { return capacity() - used(); }
};

}  // namespace allocsim
