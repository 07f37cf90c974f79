// The handful of driver calls that CudaDevice, validation and calibration need, behind one
// small interface: the CUDA runtime implements it on a GPU (cuda_api.cpp), a host-memory
// stand-in implements it everywhere else (host_api.hpp), so CI runs every other line of
// the real-GPU backend without a GPU.
#pragma once

#include <optional>
#include <string>

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
// - touch(addr, bytes) writes every byte of a range inside one live allocation, on the
//   device, so that nothing a replay reserves is only virtual.
// - copy(dst, src, bytes) is a device-to-device copy between live allocations.
// - synchronize() waits for all device work (so timings include it).
// - map_granularity() is the VMM page (cuMemGetAllocationGranularity), 0 when the device
//   has no VMM; map(bytes), bytes a multiple of it, reserves an address range, creates
//   physical memory, maps it and grants access (cuMemAddressReserve, cuMemCreate,
//   cuMemMap, cuMemSetAccess), or returns nullopt when no physical memory is left;
//   unmap(addr, bytes) undoes one map exactly.
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
  virtual std::optional<Addr> map(Bytes bytes) = 0;
  virtual void unmap(Addr addr, Bytes bytes) = 0;
};

}  // namespace allocsim
