// The Device that policies see on real hardware: every segment a policy asks for is a
// real device allocation (cudaMalloc, or VMM pages with --segments vmm), written in full
// by a device-side memset so nothing is only virtual, and every call is timed. The VMM
// calls of page-mapping policies go to the driver one for one (the memset follows each
// map). It runs on any DeviceApi: the CUDA runtime on a GPU, the host stand-in in CI.
//
// With a cap, a ballast allocation takes everything above the cap, so the card behaves
// like a smaller one that has the same context: capacity() is the cap and used() leaves
// the ballast out.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "real_gpu/device_api.hpp"
#include "sim/device.hpp"
#include "sim/sim_device.hpp"

namespace allocsim {

enum class SegmentSource : std::uint8_t {
  malloc,  // cudaMalloc / cudaFree
  vmm,     // cuMemCreate + cuMemMap of whole pages / cuMemUnmap
};

struct CudaDeviceOptions {
  Bytes cap = 0;                  // 0: the whole card
  Bytes granularity = 2_MiB;      // what the simulation charges per segment (cudaMalloc's page)
  SegmentSource source = SegmentSource::malloc;
  bool touch = true;              // write every byte of every segment
};

// Physical memory (create_physical) is listed as a malloc and its release as a free, as
// the simulation counts them; reserving and releasing addresses is timed but not listed.
enum class DeviceOp : std::uint8_t { malloc, free, failed_malloc, copy, map, unmap };
std::string_view name_of(DeviceOp op);

// One timed device call.
struct DeviceCall {
  DeviceOp op;
  Bytes bytes;
  Nanos ns;
};

class CudaDevice final : public Device {
 public:
  CudaDevice(DeviceApi& api, CudaDeviceOptions options);
  ~CudaDevice() override;
  CudaDevice(const CudaDevice&) = delete;
  CudaDevice& operator=(const CudaDevice&) = delete;

  std::optional<Segment> malloc(Bytes bytes) override;
  void free(Segment segment) override;
  void copy(Addr dst, Addr src, Bytes bytes) override;
  Bytes capacity() const override { return capacity_; }
  Bytes used() const override;
  Bytes granularity() const override { return options_.granularity; }
  Nanos elapsed() const override { return elapsed_; }
  int compute_capability() const override { return api_.compute_capability(); }
  // Whole VMM pages of the device (map_granularity) only: a range or page of another
  // size is an Error naming both, as the driver would refuse it.
  Addr reserve_addresses(Bytes bytes) override;
  void release_addresses(Addr at, Bytes bytes) override;
  std::optional<Segment> create_physical(Bytes bytes) override;
  void release_physical(Segment physical) override;
  void map(Addr at, std::span<const Segment> pages) override;
  void unmap(Addr at, Bytes bytes) override;

  // The simulated device that mirrors this one now: same capacity, what is in use now
  // as its context, the same granularity and compute capability.
  DeviceSpec mirror(const CostModel& cost) const;

  const std::vector<DeviceCall>& calls() const { return calls_; }
  Bytes ballast() const { return ballast_charged_; }

 private:
  DeviceApi& api_;
  CudaDeviceOptions options_;
  Bytes capacity_ = 0;
  template <typename Call>
  Nanos timed(Call call);
  void need_pages(Bytes bytes, const char* what) const;

  Bytes page_ = 0;  // the VMM page, 0 without VMM
  std::optional<Addr> ballast_;
  Bytes ballast_charged_ = 0;  // what the ballast took, by cudaMemGetInfo
  Nanos elapsed_ = 0;
  std::vector<DeviceCall> calls_;
  std::map<Addr, Addr> vmm_segments_;  // with --segments vmm: segment address -> physical handle
};

}  // namespace allocsim
