// What an allocator asks of the driver. All device contact of a policy goes through
// this interface, so one policy object runs on SimDevice and on a real GPU alike.
#pragma once

#include <optional>

#include "sim/error.hpp"
#include "sim/units.hpp"

namespace allocsim {

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
