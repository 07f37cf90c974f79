// The workload catalogue: spec strings to generators, file paths to readers. Other
// workloads (the model zoo) add a line to its table.
#pragma once

#include <span>
#include <string_view>

#include "sim/spec.hpp"
#include "sim/trace.hpp"

namespace allocsim {

struct WorkloadInfo {
  std::string_view name;
  std::string_view summary;
  std::span<const ParamInfo> params;
  std::string_view example;
  Trace (*make)(const Params& params, std::string_view spec);
};

std::span<const WorkloadInfo> all_workloads();

// A generator spec ("random:n=1000,seed=7") or a trace file path (anything with a '/'
// or ending in .csv). Throws Error naming the bad part.
Trace load_workload(std::string_view spec);

}  // namespace allocsim
