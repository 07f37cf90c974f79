// allocsim compare: one workload through several policies, each alone on its own copy of
// the device, side by side; with the observers a report needs when asked.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "sim/engine.hpp"
#include "studies/run_report.hpp"
#include "studies/scenario_choice.hpp"
#include "studies/study_table.hpp"

namespace allocsim {

struct Comparison {
  std::vector<std::string> policies;  // as given
  std::vector<Scenario> scenarios;    // one per policy
  std::vector<RunResult> runs;        // one per policy
  std::vector<std::unique_ptr<RunRecorders>> recorders;  // one per policy when recorded, else none

  std::vector<ReportedRun> reported() const;  // for run_report_data: each run named by its policy
};

// A comparison as the user asks for it: the command line's options, the Python keywords.
struct CompareOptions {
  std::string workload;               // one spec, commas and all, or a trace file
  std::vector<std::string> policies;  // lists, each split as a sweep splits its lists
  // Policies made in code (the Python package's): an item of `policies` equal to one's text is it.
  std::vector<PolicyMaker> given_policies;
  std::vector<WorkloadSpec> given_workloads;  // made in code (a Python trace): `workload` equal to one's text is it
  DeviceChoice device;                // one device
  std::string on_oom = "stop";
  bool record = false;                // keep the observers a report needs
};

// The options read and checked (Error naming the bad one), nothing loaded yet.
struct CompareStudy {
  WorkloadSpec workload;
  std::vector<PolicyMaker> policies;
  DeviceSpec device;
  OnOom on_oom = OnOom::stop;
  bool record = false;
};
CompareStudy compare_study(const CompareOptions& options);

// The workload loaded for the device, then compare_policies.
Comparison run_compare(const CompareStudy& study);

// The rows of `compare --csv` (those of `run --csv`): a row per policy, the metric columns,
// then each policy statistic in order of first appearance.
StudyTable compare_table(std::span<const RunResult> runs);

// The runs are independent and in the order given.
Comparison compare_policies(const std::shared_ptr<const Trace>& trace, const DeviceSpec& device,
                            std::span<const PolicyMaker> policies, OnOom on_oom, bool record);

}  // namespace allocsim
