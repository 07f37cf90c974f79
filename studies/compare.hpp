// allocsim compare: one workload through several policies, each alone on its own copy of
// the device, side by side; with the observers a report needs when asked.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "sim/engine.hpp"
#include "studies/run_report.hpp"

namespace allocsim {

struct Comparison {
  std::vector<std::string> policies;  // as given
  std::vector<Scenario> scenarios;    // one per policy
  std::vector<RunResult> runs;        // one per policy
  std::vector<std::unique_ptr<RunRecorders>> recorders;  // one per policy when recorded, else none

  std::vector<ReportedRun> reported() const;  // for run_report_data: each run named by its policy
};

// The runs are independent and in the order given.
Comparison compare_policies(const std::shared_ptr<const Trace>& trace, const DeviceSpec& device,
                            std::span<const PolicyMaker> policies, OnOom on_oom, bool record);

}  // namespace allocsim
