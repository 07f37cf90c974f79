// A host-memory stand-in for the device API: a device of a chosen size whose driver
// charges whole pages per allocation (as cudaMalloc charges 2 MiB pages on current GPUs)
// and whose context takes a fixed share. It checks every call as strictly as a
// sanitizer would (a free of an unknown address, a touch or copy outside a live
// allocation, an unmap that does not cover whole mappings are Errors), so a harness bug
// fails in CI. Its VMM follows the driver's rules (cuMemCreate in whole pages, mappings
// inside a reservation, memory released only once it is unmapped too) without backing
// mapped memory by host pages: touch and copy check mapped ranges and write nothing.
#pragma once

#include <cstdint>
#include <map>
#include <memory>

#include "real_gpu/device_api.hpp"

namespace allocsim {

struct HostDeviceConfig {
  Bytes total = 16_GiB;
  Bytes context = 512_MiB;  // gone before the first allocation, like a CUDA context
  Bytes page = 2_MiB;       // malloc charges whole pages; the VMM granularity
  bool backed = false;      // hold real host memory for mallocs and write it on touch (small devices only)
  int compute_capability = 90;
};

struct HostApiCounters {
  std::uint64_t mallocs = 0;
  std::uint64_t failed_mallocs = 0;
  std::uint64_t frees = 0;
  std::uint64_t reservations = 0;     // cuMemAddressReserve
  std::uint64_t creates = 0;          // cuMemCreate that succeeded
  std::uint64_t failed_creates = 0;
  std::uint64_t releases = 0;         // cuMemRelease
  std::uint64_t maps = 0;             // mappings made: one cuMemMap per page
  std::uint64_t unmaps = 0;           // mappings undone: one cuMemUnmap each
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
  Addr reserve_addresses(Bytes bytes) override;
  void release_addresses(Addr at, Bytes bytes) override;
  std::optional<Segment> create_physical(Bytes bytes) override;
  void release_physical(Segment physical) override;
  void map(Addr at, std::span<const Segment> pages) override;
  void unmap(Addr at, Bytes bytes) override;

  const HostApiCounters& counters() const { return counters_; }
  // Live mallocs, physical allocations and reservations: 0 once everything went back.
  std::size_t live_allocations() const { return live_.size() + physical_.size() + reservations_.size(); }
  // Whether every byte of a live malloc was touched (written) since it was made.
  bool fully_touched(Addr addr) const;

 private:
  struct Allocation {
    Bytes bytes;
    Bytes charged;
    bool touched_whole;  // one touch covered every byte
    std::unique_ptr<std::byte[]> storage;
  };
  struct Physical {
    Bytes bytes;
    std::uint64_t mappings = 0;
    bool released = false;  // by release_physical; the memory goes with the last mapping
  };
  struct Mapping {
    Addr handle;
    Bytes bytes;
  };

  // The malloc holding [addr, addr + bytes), or nullptr when mappings cover it; else an Error.
  const Allocation* holding(Addr addr, Bytes bytes, const char* what) const;
  bool mapped_through(Addr addr, Bytes bytes) const;
  void check_pages(Bytes bytes, const char* what) const;
  const std::pair<const Addr, Bytes>& reservation_holding(Addr at, Bytes bytes, const char* what) const;
  void drop_if_gone(std::map<Addr, Physical>::iterator physical);

  HostDeviceConfig config_;
  Bytes used_;
  Addr next_addr_ = 1_GiB;  // unbacked allocations get addresses that are never reused
  // Far above host pointers (under 2^47) and malloc addresses: never mistaken for either.
  Addr next_virtual_ = Addr{1} << 52;
  Addr next_handle_ = 1;
  std::map<Addr, Allocation> live_;
  std::map<Addr, Bytes> reservations_;
  std::map<Addr, Physical> physical_;  // by handle
  std::map<Addr, Mapping> mappings_;   // by address
  HostApiCounters counters_;
};

}  // namespace allocsim
