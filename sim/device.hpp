// What an allocator asks of the driver. All device contact of a policy goes through
// this interface, so one policy object runs on SimDevice and on a real GPU alike.
#pragma once

#include <optional>
#include <span>
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
  Bytes context_overhead = 0;     // taken by each process's CUDA context before its first allocation
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
// - Virtual memory is CUDA's VMM API, one call each, so that a real GPU implements it as
//   it is: reserve_addresses(bytes) (cuMemAddressReserve) returns a range no segment will
//   ever use, with no memory behind it; release_addresses takes one back whole
//   (cuMemAddressFree) once nothing is mapped in it.
//   create_physical(bytes) (cuMemCreate) makes physical memory, charged to used() like a
//   malloc and nullopt when it does not fit; its segment's addr names the memory (a
//   handle), it is no address to read: a malloc'd segment can never be mapped, a physical
//   one is only reached through map. release_physical (cuMemRelease) takes it back once.
//   map(at, pages) places the pages one after another at `at`, inside a reserved range,
//   readable and writable (cuMemMap of each + cuMemSetAccess of the whole): one call, one
//   cost. unmap(at, bytes) (cuMemUnmap) takes away whole mappings covering [at, at+bytes);
//   the pages stay held and can be mapped again. A device without the API throws.
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
  virtual Addr reserve_addresses(Bytes) { no_vmm(); }
  virtual void release_addresses(Addr, Bytes) { no_vmm(); }
  virtual std::optional<Segment> create_physical(Bytes) { no_vmm(); }
  virtual void release_physical(Segment) { no_vmm(); }
  virtual void map(Addr, std::span<const Segment>) { no_vmm(); }
  virtual void unmap(Addr, Bytes) { no_vmm(); }
  // major * 10 + minor (90 for sm_90): TensorFlow's memory reserve depends on it.
  virtual int compute_capability() const = 0;
  // A process's CUDA context, taken when a tenant starts and given back when it exits;
  // false when it does not fit. A real device already has the context of the one process
  // that replays every tenant: by default nothing is charged.
  virtual bool open_context() { return true; }
  virtual void close_context() {}

  // What cudaMemGetInfo would call free.
  Bytes available() const { return capacity() - used(); }

 private:
  [[noreturn]] static void no_vmm() { throw Error("this device has no virtual memory API"); }
};

// The bytes of `pages` together: what one map call places.
inline Bytes total_bytes(std::span<const Segment> pages) {
  Bytes bytes = 0;
  for (const Segment& page : pages) bytes += page.bytes;
  return bytes;
}

}  // namespace allocsim
