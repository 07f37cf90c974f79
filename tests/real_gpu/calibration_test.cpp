// Calibration: the fit on numbers computed by hand, and a whole run on the host stand-in.
#include <sstream>

#include <catch2/catch.hpp>

#include "real_gpu/calibration.hpp"
#include "real_gpu/host_api.hpp"

namespace allocsim {
namespace {

TEST_CASE("calibration: the fit is the least-squares line through each size's median", "[real_gpu]") {
  // 1000 ns + 0.1 ns/byte; the 1000-byte size has an outlier on each side of its median.
  const std::vector<CostSample> samples{{"malloc", 1000, 5},    {"malloc", 1000, 1100}, {"malloc", 1000, 99999},
                                        {"malloc", 2000, 1200}, {"malloc", 3000, 1300}, {"free", 1000, 7}};
  const LatencyFit fit = fit_latency(samples, "malloc");
  CHECK(fit.fixed_ns == 1000);
  CHECK(fit.ns_per_byte == Approx(0.1));
  const LatencyFit single = fit_latency(samples, "free");  // one size: flat
  CHECK(single.fixed_ns == 7);
  CHECK(single.ns_per_byte == 0);
  CHECK(fit_latency(samples, "map").fixed_ns == 0);
}

TEST_CASE("calibration: bigger is never cheaper, and no cost is negative", "[real_gpu]") {
  const std::vector<CostSample> falling{{"free", 1000, 300}, {"free", 2000, 200}, {"free", 3000, 100}};
  const LatencyFit flat = fit_latency(falling, "free");
  CHECK(flat.ns_per_byte == 0);
  CHECK(flat.fixed_ns == 200);
  // y = 0.5 x - 400 would have a negative fixed cost: through the origin instead.
  const std::vector<CostSample> steep{{"copy", 1000, 100}, {"copy", 2000, 600}, {"copy", 3000, 1100}};
  const LatencyFit origin = fit_latency(steep, "copy");
  CHECK(origin.fixed_ns == 0);
  CHECK(origin.ns_per_byte == Approx((1000.0 * 100 + 2000.0 * 600 + 3000.0 * 1100) / (1e6 + 4e6 + 9e6)));
}

TEST_CASE("calibration: a run on the stand-in times every call it promises", "[real_gpu]") {
  HostDeviceConfig config;
  config.total = 256_MiB;
  config.context = 32_MiB;
  config.backed = true;
  HostDeviceApi api(config);
  CalibrationOptions options;
  options.max_bytes = 16_MiB;
  options.repeats = 2;
  options.copy_bytes = 8_MiB;
  const CostProfile profile = calibrate(api, options);
  CHECK(profile.backend == "host");
  CHECK(profile.total_bytes == 256_MiB);
  CHECK(profile.context_bytes == 32_MiB);
  CHECK(profile.map_granularity == 2_MiB);
  std::size_t mallocs = 0;
  std::size_t maps = 0;
  std::size_t copies = 0;
  for (const CostSample& sample : profile.samples) {
    mallocs += sample.op == "malloc";
    maps += sample.op == "map";
    copies += sample.op == "copy";
    CHECK(sample.ns > 0);
  }
  CHECK(mallocs == 2 * 16);  // 512 B .. 16 MiB: 16 sizes, twice each
  CHECK(maps == 2 * 4);      // 2, 4, 8, 16 MiB
  CHECK(copies == 2);
  CHECK(profile.cost.copy_bytes_per_ns > 0);
  CHECK(api.live_allocations() == 0);
  CHECK(api.mem_get_info().free == 224_MiB);
}

}  // namespace
}  // namespace allocsim
