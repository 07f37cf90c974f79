// A simulated device: capacity, CUDA context overhead, physical page granularity and a
// cost model for driver calls. Addresses come from a bump pointer and are never reused,
// so blocks of different segments and tenants can never alias.
#pragma once

#include <cstdint>
#include <string>

#include "sim/device.hpp"

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

struct DeviceStats {
  std::uint64_t mallocs = 0;
  std::uint64_t frees = 0;
  std::uint64_t failed_mallocs = 0;
  std::uint64_t maps = 0;
  std::uint64_t unmaps = 0;
  Bytes bytes_copied = 0;
  Bytes peak_used = 0;
};

class SimDevice final : public Device {
 public:
  explicit SimDevice(DeviceSpec spec);

  std::optional<Segment> malloc(Bytes bytes) override;
  void free(Segment segment) override;
  void copy(Addr dst, Addr src, Bytes bytes) override;
  Bytes capacity() const override { return spec_.capacity; }
  Bytes used() const override { return used_; }
  Bytes granularity() const override { return spec_.granularity; }
  Nanos elapsed() const override { return elapsed_; }
  Addr reserve_addresses(Bytes bytes) override;
  void map(Bytes bytes) override;
  void unmap(Bytes bytes) override;
  int compute_capability() const override { return spec_.compute_capability; }

  const DeviceSpec& spec() const { return spec_; }
  const DeviceStats& stats() const { return stats_; }

 private:
  Bytes charge(Bytes bytes) const { return align_up(bytes, spec_.granularity); }

  DeviceSpec spec_;
  DeviceStats stats_;
  Bytes used_;
  Addr next_addr_ = 1_GiB;  // address 0 stays invalid
  Nanos elapsed_ = 0;
};

}  // namespace allocsim
