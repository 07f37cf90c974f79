// A host-memory stand-in for the device API: a device of a chosen size whose driver
// charges whole pages per allocation (as cudaMalloc charges 2 MiB pages on current GPUs)
// and whose context takes a fixed share. It checks every call as strictly as a
// sanitizer would (a free of an unknown address, a touch or copy outside a live
// allocation, an unmap of another size are Errors), so a harness bug fails in CI.
#pragma once

#include <cstdint>
#include <map>
#include <memory>

#include "real_gpu/device_api.hpp"

namespace allocsim {

struct HostDeviceConfig {
  Bytes total = 16_GiB;
  Bytes context = 512_MiB;  // gone before the first allocation, like a CUDA context
  Bytes page = 2_MiB;       // malloc and map charge whole pages
  bool backed = false;      // hold real host memory and write it on touch (small devices only)
  int compute_capability = 90;
};

struct HostApiCounters {
  std::uint64_t mallocs = 0;
  std::uint64_t failed_mallocs = 0;
  std::uint64_t frees = 0;
  std::uint64_t maps = 0;
  std::uint64_t unmaps = 0;
  std::uint64_t copies = 0;
  Bytes bytes_touched = 0;
};

class HostDeviceApi final : public DeviceApi {
 public:
  explicit HostDeviceApi(HostDeviceConfig config = {});
  ~HostDeviceApi() override;

  std::string name() const override { return "host stand-in"; }
  std::string backend() const override { return "host"; }
  int compute_capability() const override { return config_.compute_capability; }
  MemInfo mem_get_info() override { return {config_.total - used_, config_.total}; }
  std::optional<Addr> malloc(Bytes bytes) override;
  void free(Addr addr) override;
  void touch(Addr addr, Bytes bytes) override;
  void copy(Addr dst, Addr src, Bytes bytes) override;
  void synchronize() override {}
  Bytes map_granularity() override { return config_.page; }
  std::optional<Addr> map(Bytes bytes) override;
  void unmap(Addr addr, Bytes bytes) override;

  const HostApiCounters& counters() const { return counters_; }
  std::size_t live_allocations() const { return live_.size(); }
  // Whether every byte of a live allocation was touched (written) since it was made.
  bool fully_touched(Addr addr) const;

 private:
  struct Allocation {
    Bytes bytes;
    Bytes charged;
    bool mapped;         // made by map, not malloc
    bool touched_whole;  // one touch covered every byte
    std::unique_ptr<std::byte[]> storage;
  };

  std::optional<Addr> make(Bytes bytes, bool mapped);
  void release(Addr addr, bool mapped, Bytes bytes);
  const Allocation& holding(Addr addr, Bytes bytes, const char* what) const;

  HostDeviceConfig config_;
  Bytes used_;
  Addr next_addr_ = 1_GiB;  // unbacked allocations get addresses that are never reused
  std::map<Addr, Allocation> live_;
  HostApiCounters counters_;
};

}  // namespace allocsim
