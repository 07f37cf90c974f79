// The handful of driver calls that CudaDevice, validation and calibration need, behind one
// small interface: the CUDA runtime implements it on a GPU (cuda_api.cpp), a host-memory
// stand-in implements it everywhere else (host_api.hpp), so CI runs every other line of
// the real-GPU backend without a GPU.
#pragma once

#include <optional>
#include <string>

#include <span>

#include "sim/device.hpp"
#include "sim/units.hpp"

namespace allocsim {

// What cudaMemGetInfo reports.
struct MemInfo {
  Bytes free = 0;
  Bytes total = 0;
};

// Contract:
// - malloc(bytes), bytes > 0: a device allocation (cudaMalloc) aligned to at least 512
//   bytes, or nullopt when the device is out of memory; any other failure throws Error.
// - free(addr) takes back what malloc returned, exactly once (cudaFree).
// - touch(addr, bytes) writes every byte of a range inside one live allocation (or inside
//   contiguously mapped memory), on the device, so that nothing a replay reserves is only
//   virtual.
// - copy(dst, src, bytes) is a device-to-device copy between live allocations.
// - synchronize() waits for all device work (so timings include it).
// - The VMM calls are CUDA's driver calls one for one; `bytes` and `at` are multiples of
//   map_granularity() (cuMemGetAllocationGranularity), which is 0 when the device has
//   no VMM:
//   reserve_addresses(bytes) (cuMemAddressReserve) returns a range with nothing behind it;
//   release_addresses(at, bytes) (cuMemAddressFree) gives one back whole, nothing mapped.
//   create_physical(bytes) (cuMemCreate) returns physical memory, its addr a handle and no
//   address, or nullopt when the device is out of memory; release_physical(handle)
//   (cuMemRelease): the memory goes once no mapping of it is left.
//   map(at, pages) maps each page whole, one after another from `at`, inside one
//   reservation (one cuMemMap each), then grants read/write on the range (cuMemSetAccess);
//   unmap(at, bytes) undoes the mappings that exactly cover [at, at + bytes) (one
//   cuMemUnmap each). touch and copy reach mapped memory too.
class DeviceApi {
 public:
  virtual ~DeviceApi() = default;
  virtual std::string name() const = 0;
  virtual std::string backend() const = 0;  // "cuda" or "host"
  virtual int compute_capability() const = 0;
  virtual MemInfo mem_get_info() = 0;
  virtual std::optional<Addr> malloc(Bytes bytes) = 0;
  virtual void free(Addr addr) = 0;
  virtual void touch(Addr addr, Bytes bytes) = 0;
  virtual void copy(Addr dst, Addr src, Bytes bytes) = 0;
  virtual void synchronize() = 0;
  virtual Bytes map_granularity() = 0;
  virtual Addr reserve_addresses(Bytes bytes) = 0;
  virtual void release_addresses(Addr at, Bytes bytes) = 0;
  virtual std::optional<Segment> create_physical(Bytes bytes) = 0;
  virtual void release_physical(Segment physical) = 0;
  virtual void map(Addr at, std::span<const Segment> pages) = 0;
  virtual void unmap(Addr at, Bytes bytes) = 0;
};

}  // namespace allocsim
