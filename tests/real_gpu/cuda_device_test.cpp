// CudaDevice over the host stand-in: the same code that runs on a GPU.
#include <catch2/catch.hpp>

#include "real_gpu/cuda_device.hpp"
#include "real_gpu/host_api.hpp"
#include "real_gpu/host_card.hpp"
#include "sim/error.hpp"

namespace allocsim {
namespace {

HostDeviceConfig card(bool backed = false) { return test::host_card(512_MiB, 64_MiB, backed); }

TEST_CASE("CudaDevice: every segment is a real allocation, written in full", "[real_gpu]") {
  HostDeviceApi api(card(true));
  CudaDevice device(api, {});
  CHECK(device.capacity() == 512_MiB);
  CHECK(device.used() == 64_MiB);
  const auto segment = device.malloc(3_MiB);
  REQUIRE(segment);
  CHECK(segment->bytes == 3_MiB);
  CHECK(api.fully_touched(segment->addr));
  CHECK(device.used() == 68_MiB);  // two pages, as cudaMemGetInfo would show
  device.free(*segment);
  CHECK(device.used() == 64_MiB);
  REQUIRE(device.calls().size() == 2);
  CHECK(device.calls()[0].op == DeviceOp::malloc);
  CHECK(device.calls()[0].bytes == 3_MiB);
  CHECK(device.calls()[1].op == DeviceOp::free);
  CHECK(device.elapsed() == device.calls()[0].ns + device.calls()[1].ns);
}

TEST_CASE("CudaDevice: a cap is a ballast that makes the card smaller", "[real_gpu]") {
  HostDeviceApi api(card());
  {
    CudaDeviceOptions options;
    options.cap = 80_MiB;
    CudaDevice device(api, options);
    CHECK(device.capacity() == 80_MiB);
    CHECK(device.used() == 64_MiB);  // the context stays; the ballast is not counted
    CHECK(device.ballast() == 432_MiB);
    CHECK(device.available() == 16_MiB);
    const auto a = device.malloc(16_MiB);
    REQUIRE(a);
    CHECK_FALSE(device.malloc(1));
    CHECK(device.calls().back().op == DeviceOp::failed_malloc);
    device.free(*a);
    const DeviceSpec mirror = device.mirror(CostModel{});
    CHECK(mirror.capacity == 80_MiB);
    CHECK(mirror.context_overhead == 64_MiB);
    CHECK(mirror.granularity == 2_MiB);
  }
  CHECK(api.mem_get_info().free == 448_MiB);  // the ballast went back
  CudaDeviceOptions too_small;
  too_small.cap = 64_MiB;
  CHECK_THROWS_AS(CudaDevice(api, too_small), Error);
  CudaDeviceOptions too_big;
  too_big.cap = 1_GiB;
  CHECK_THROWS_AS(CudaDevice(api, too_big), Error);
}

TEST_CASE("CudaDevice: VMM segments are whole mapped pages", "[real_gpu]") {
  HostDeviceApi api(card(true));
  CudaDeviceOptions options;
  options.source = SegmentSource::vmm;
  CudaDevice device(api, options);
  const auto segment = device.malloc(3_MiB);
  REQUIRE(segment);
  CHECK(api.counters().maps == 1);
  CHECK(api.counters().mallocs == 0);
  CHECK(api.counters().bytes_touched == 4_MiB);  // the whole mapping
  device.free(*segment);                         // unmaps 4 MiB: the stand-in checks the size
  CHECK(api.counters().unmaps == 1);
}

}  // namespace
}  // namespace allocsim
