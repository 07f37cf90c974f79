// `allocsim calibrate`: measures what a device's allocation calls cost and fits the
// simulator's CostModel to it. Every sample is kept in the profile.
//   malloc/free: sizes from 512 B to max_bytes (powers of two), each allocated, written
//     in full, freed, `repeats` times; latency = fixed + per byte, by least squares over
//     the median of each size.
//   map/unmap: the same over whole VMM pages, where the device has the VMM API.
//   copy: device-to-device bandwidth over two buffers of copy_bytes.
#pragma once

#include <span>

#include "real_gpu/device_api.hpp"
#include "sim/cost_profile.hpp"

namespace allocsim {

struct CalibrationOptions {
  Bytes max_bytes = 4_GiB;  // capped at a quarter of the free memory
  int repeats = 5;
  Bytes copy_bytes = 1_GiB;  // capped at an eighth of the free memory
};

CostProfile calibrate(DeviceApi& api, const CalibrationOptions& options);

// The least-squares line through (bytes, ns), per-byte cost and fixed cost both kept at
// 0 or more. Of several samples of one size, their median counts.
LatencyFit fit_latency(std::span<const CostSample> samples, std::string_view op);

}  // namespace allocsim
