// A device cost profile: what `allocsim calibrate` measured on a device, as JSON, and
// the CostModel that `--device-profile FILE` loads from it into SimDevice. The JSON also
// keeps the raw samples, so a later model can be fitted without the hardware, and the VMM
// map/unmap fits, which loading does not copy into CostModel's map_* and unmap_* yet.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include "sim/sim_device.hpp"

namespace allocsim {

// latency = fixed_ns + ns_per_byte * bytes
struct LatencyFit {
  Nanos fixed_ns = 0;
  double ns_per_byte = 0;
};

struct CostSample {
  std::string op;  // malloc, free, map, unmap, copy
  Bytes bytes = 0;
  Nanos ns = 0;
};

struct CostProfile {
  std::string device;   // as the driver names it
  std::string backend;  // cuda or host
  Bytes total_bytes = 0;
  Bytes context_bytes = 0;  // in use before the first allocation
  int compute_capability = 0;
  CostModel cost;
  Bytes map_granularity = 0;  // 0: no VMM on this device; map and unmap are then zero
  LatencyFit map;
  LatencyFit unmap;
  std::vector<CostSample> samples;
};

constexpr int kCostProfileVersion = 1;

void write_cost_profile(std::ostream& out, const CostProfile& profile);

// Throws Error naming `source` and the bad or missing key.
CostProfile read_cost_profile(std::istream& in, const std::string& source);
CostProfile load_cost_profile(const std::string& path);

}  // namespace allocsim
