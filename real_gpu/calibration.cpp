#include "real_gpu/calibration.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <numeric>

#include "sim/error.hpp"
#include "sim/linear_fit.hpp"

namespace allocsim {
namespace {

using Clock = std::chrono::steady_clock;

Nanos nonzero_since(Clock::time_point start) {
  const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start).count();
  return static_cast<Nanos>(std::max<std::int64_t>(ns, 1));  // a zero would make bandwidth infinite
}

std::vector<Bytes> sizes_up_to(Bytes smallest, Bytes largest) {
  std::vector<Bytes> sizes;
  for (Bytes bytes = smallest; bytes <= largest; bytes *= 2) sizes.push_back(bytes);
  return sizes;
}

void measure_malloc_free(DeviceApi& api, const std::vector<Bytes>& sizes, int repeats, CostProfile& profile) {
  for (const Bytes bytes : sizes) {
    for (int i = 0; i < repeats; ++i) {
      api.synchronize();
      auto start = Clock::now();
      const auto addr = api.malloc(bytes);
      const Nanos malloc_ns = nonzero_since(start);
      if (!addr) throw Error("calibrate: cudaMalloc of " + format_bytes(bytes) + " failed with memory free");
      api.touch(*addr, bytes);
      api.synchronize();
      start = Clock::now();
      api.free(*addr);
      profile.samples.push_back({"malloc", bytes, malloc_ns});
      profile.samples.push_back({"free", bytes, nonzero_since(start)});
    }
  }
}

// Times what the cost model's map and unmap stand for: mapping physical memory at a
// reserved address with access granted (cuMemMap + cuMemSetAccess) and unmapping it
// (cuMemUnmap). Creating and releasing the memory is a malloc's and a free's work, and
// reserving addresses is not charged: both stay out of the samples.
void measure_map_unmap(DeviceApi& api, const std::vector<Bytes>& sizes, int repeats, CostProfile& profile) {
  for (const Bytes bytes : sizes) {
    for (int i = 0; i < repeats; ++i) {
      const auto physical = api.create_physical(bytes);
      if (!physical) throw Error("calibrate: creating " + format_bytes(bytes) + " of physical memory failed with memory free");
      const Addr at = api.reserve_addresses(bytes);
      api.synchronize();
      auto start = Clock::now();
      api.map(at, std::span(&*physical, 1));
      const Nanos map_ns = nonzero_since(start);
      api.touch(at, bytes);
      api.synchronize();
      start = Clock::now();
      api.unmap(at, bytes);
      const Nanos unmap_ns = nonzero_since(start);
      api.release_physical(*physical);
      api.release_addresses(at, bytes);
      profile.samples.push_back({"map", bytes, map_ns});
      profile.samples.push_back({"unmap", bytes, unmap_ns});
    }
  }
}

double measure_copy(DeviceApi& api, Bytes bytes, int repeats, CostProfile& profile) {
  const auto a = api.malloc(bytes);
  const auto b = api.malloc(bytes);
  if (!a || !b) throw Error("calibrate: two buffers of " + format_bytes(bytes) + " for the copy do not fit");
  api.touch(*a, bytes);
  api.touch(*b, bytes);
  api.copy(*b, *a, bytes);  // the first copy pays for setting up
  api.synchronize();
  Nanos total = 0;
  for (int i = 0; i < repeats; ++i) {
    const auto start = Clock::now();
    api.copy(*b, *a, bytes);
    api.synchronize();
    const Nanos ns = nonzero_since(start);
    total += ns;
    profile.samples.push_back({"copy", bytes, ns});
  }
  api.free(*a);
  api.free(*b);
  return static_cast<double>(bytes) * repeats / static_cast<double>(total);
}

}  // namespace

LatencyFit fit_latency(std::span<const CostSample> samples, std::string_view op) {
  std::map<Bytes, std::vector<Nanos>> by_size;
  for (const CostSample& sample : samples) {
    if (sample.op == op) by_size[sample.bytes].push_back(sample.ns);
  }
  if (by_size.empty()) return {};
  std::vector<double> bytes;
  std::vector<double> medians;
  for (auto& [size, times] : by_size) {
    std::sort(times.begin(), times.end());
    const std::size_t n = times.size();
    bytes.push_back(static_cast<double>(size));
    medians.push_back(n % 2 == 1 ? static_cast<double>(times[n / 2])
                                 : (static_cast<double>(times[n / 2 - 1]) + static_cast<double>(times[n / 2])) / 2);
  }
  const auto line = fit_line(bytes, medians);  // none for a single size: flat
  double slope = line ? line->slope : 0;
  double fixed = line ? line->intercept : medians.front();
  if (slope < 0) {  // bigger is never cheaper: the line is flat, at the mean
    slope = 0;
    fixed = std::accumulate(medians.begin(), medians.end(), 0.0) / static_cast<double>(medians.size());
  }
  if (fixed < 0) {  // no cost is negative: through the origin instead
    const auto origin = fit_line_through_origin(bytes, medians);
    fixed = 0;
    slope = origin ? origin->slope : 0;
  }
  return {static_cast<Nanos>(std::llround(fixed)), slope};
}

CostProfile calibrate(DeviceApi& api, const CalibrationOptions& options) {
  if (options.repeats < 1) throw Error("calibrate: --repeat must be 1 or more");
  const MemInfo info = api.mem_get_info();
  CostProfile profile;
  profile.device = api.name();
  profile.backend = api.backend();
  profile.total_bytes = info.total;
  profile.context_bytes = info.total - info.free;
  profile.compute_capability = api.compute_capability();

  const Bytes largest = std::min(options.max_bytes, info.free / 4);
  if (largest < 2_MiB) throw Error("calibrate: less than 8 MiB free on " + api.name());
  measure_malloc_free(api, sizes_up_to(512, largest), options.repeats, profile);
  profile.map_granularity = api.map_granularity();
  if (profile.map_granularity != 0 && profile.map_granularity <= largest) {
    measure_map_unmap(api, sizes_up_to(profile.map_granularity, largest), options.repeats, profile);
  }
  const Bytes copy_bytes = std::max<Bytes>(align_down(std::min(options.copy_bytes, info.free / 8), 2_MiB), 2_MiB);
  profile.cost.copy_bytes_per_ns = measure_copy(api, copy_bytes, options.repeats, profile);

  const LatencyFit malloc_fit = fit_latency(profile.samples, "malloc");
  const LatencyFit free_fit = fit_latency(profile.samples, "free");
  profile.cost.malloc_fixed_ns = malloc_fit.fixed_ns;
  profile.cost.malloc_ns_per_byte = malloc_fit.ns_per_byte;
  profile.cost.free_fixed_ns = free_fit.fixed_ns;
  profile.cost.free_ns_per_byte = free_fit.ns_per_byte;
  profile.map = fit_latency(profile.samples, "map");
  profile.unmap = fit_latency(profile.samples, "unmap");
  return profile;
}

}  // namespace allocsim
