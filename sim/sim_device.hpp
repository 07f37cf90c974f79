// A simulated device, built from a DeviceSpec (device.hpp): capacity, CUDA context
// overhead, physical page granularity and a cost model for driver calls. Addresses come from a bump pointer and are never reused,
// so blocks of different segments and tenants can never alias.
#pragma once

#include <cstdint>
#include <string>

#include "sim/counter.hpp"
#include "sim/device.hpp"

namespace allocsim {

// mallocs, frees and failed_mallocs count device allocations of both kinds, cudaMalloc
// segments and physical memory (cuMemCreate): both take memory from the device alike.
struct DeviceStats {
  std::uint64_t mallocs = 0;
  std::uint64_t frees = 0;
  std::uint64_t failed_mallocs = 0;
  std::uint64_t maps = 0;
  std::uint64_t unmaps = 0;
  Bytes bytes_copied = 0;
  Counter used;      // bytes gone from the device: context, page rounding and all
  Counter physical;  // bytes of physical memory (create_physical), as charged
};

// Who pays for CUDA contexts: the one process that owns this device object, charged at
// construction (a policy on its own device, as tests drive one), or each tenant the
// engine starts (open_context), as each process on a shared card has its own.
enum class Contexts : std::uint8_t { one_at_construction, per_open };

class SimDevice final : public Device {
 public:
  explicit SimDevice(DeviceSpec spec, Contexts contexts = Contexts::one_at_construction);

  std::optional<Segment> malloc(Bytes bytes) override;
  void free(Segment segment) override;
  void copy(Addr dst, Addr src, Bytes bytes) override;
  Bytes capacity() const override { return spec_.capacity; }
  Bytes used() const override { return stats_.used.current; }
  Bytes granularity() const override { return spec_.granularity; }
  Nanos elapsed() const override { return elapsed_; }
  // Reserving and releasing addresses costs nothing; physical memory costs what a malloc
  // or free of its size does; map and unmap cost the cost model's map and unmap of the
  // bytes of the call. The calls are not checked against each other (the host stand-in
  // of real_gpu/ is strict), so that replay stays as fast as with malloc.
  Addr reserve_addresses(Bytes bytes) override;
  void release_addresses(Addr, Bytes) override {}
  std::optional<Segment> create_physical(Bytes bytes) override;
  void release_physical(Segment physical) override;
  void map(Addr at, std::span<const Segment> pages) override;
  void unmap(Addr at, Bytes bytes) override;
  int compute_capability() const override { return spec_.compute_capability; }
  // Contexts::per_open: charges spec().context_overhead (false when it does not fit);
  // one_at_construction: the one context is there already, nothing more is charged.
  bool open_context() override;
  void close_context() override;

  const DeviceSpec& spec() const { return spec_; }
  const DeviceStats& stats() const { return stats_; }

 private:
  Bytes charge(Bytes bytes) const { return align_up(bytes, spec_.granularity); }
  std::optional<Segment> take(Bytes bytes, const char* call);  // a malloc or a physical allocation
  void give_back(Segment segment);

  DeviceSpec spec_;
  Contexts contexts_;
  DeviceStats stats_;
  Addr next_addr_ = 1_GiB;  // address 0 stays invalid
  Nanos elapsed_ = 0;
};

}  // namespace allocsim
