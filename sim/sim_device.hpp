// A simulated device, built from a DeviceSpec (device.hpp): capacity, CUDA context
// overhead, physical page granularity and a cost model for driver calls. Addresses come from a bump pointer and are never reused,
// so blocks of different segments and tenants can never alias.
#pragma once

#include <cstdint>
#include <string>

#include "sim/device.hpp"

namespace allocsim {

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
