#include "studies/compare.hpp"

#include <algorithm>

#include "policies/registry.hpp"
#include "sim/error.hpp"
#include "studies/sweep_grid.hpp"
#include "workloads/catalogue.hpp"

namespace allocsim {

std::vector<ReportedRun> Comparison::reported() const {
  std::vector<ReportedRun> out;
  for (std::size_t i = 0; i < runs.size() && i < recorders.size(); ++i) {
    out.push_back(ReportedRun{policies[i], scenarios[i], runs[i], *recorders[i]});
  }
  return out;
}

Comparison compare_policies(const std::shared_ptr<const Trace>& trace, const DeviceSpec& device,
                            std::span<const PolicyMaker> policies, OnOom on_oom, bool record) {
  if (policies.empty()) throw Error("compare needs at least one policy");
  Comparison comparison;
  for (const PolicyMaker& policy : policies) {
    comparison.policies.push_back(policy.text);
    Scenario& scenario = comparison.scenarios.emplace_back();
    scenario.device = device;
    scenario.on_oom = on_oom;
    scenario.tenants.push_back(TenantSpec{trace, policy, 0});
  }
  for (const Scenario& scenario : comparison.scenarios) {
    std::vector<Observer*> observers;
    if (record) observers = comparison.recorders.emplace_back(std::make_unique<RunRecorders>())->observers();
    comparison.runs.push_back(run(scenario, observers));
  }
  return comparison;
}

CompareStudy compare_study(const CompareOptions& options) {
  if (options.workload.empty()) throw Error("compare needs --workload SPEC (see --help)");
  CompareStudy study;
  study.workload = parse_workload_spec(options.workload, options.given_workloads);
  if (options.policies.empty()) throw Error("compare needs --policy SPECS, e.g. --policy bfc,growth,caching");
  std::vector<std::string> policies;
  for (const std::string& list : options.policies) {
    for (std::string& policy : split_list(list, "--policy")) policies.push_back(std::move(policy));
  }
  study.on_oom = options.on_oom == "stop"       ? OnOom::stop
                 : options.on_oom == "continue" ? OnOom::continue_run
                                                : throw Error("--on-oom " + options.on_oom + " is not stop or continue");
  study.device = chosen_device(options.device);
  for (const std::string& policy : policies) {  // read before a long trace load
    const auto given = std::find_if(options.given_policies.begin(), options.given_policies.end(),
                                    [&](const PolicyMaker& maker) { return maker.text == policy; });
    study.policies.push_back(given != options.given_policies.end() ? *given : policy_maker(policy));
  }
  study.record = options.record;
  return study;
}

Comparison run_compare(const CompareStudy& study) {
  const auto trace = load_shared_workload(study.workload, LoadOptions{std::nullopt, study.device.compute_capability});
  return compare_policies(trace, study.device, study.policies, study.on_oom, study.record);
}

StudyTable compare_table(std::span<const RunResult> runs) {
  StudyTable table;
  for (const Metric& metric : metrics()) table.columns.emplace_back(metric.name);
  std::vector<std::string> extras;
  for (const RunResult& run : runs) {
    for (const TenantResult& tenant : run.tenants) {
      for (const PolicyStat& stat : tenant.extra) {
        if (std::find(extras.begin(), extras.end(), stat.name) == extras.end()) extras.push_back(stat.name);
      }
    }
  }
  table.columns.insert(table.columns.end(), extras.begin(), extras.end());
  for (const RunResult& run : runs) {
    for (const TenantResult& tenant : run.tenants) {
      std::vector<std::string> cells;
      for (const Metric& metric : metrics()) cells.push_back(format_plain(metric.get(run, tenant)));
      for (const std::string& name : extras) {
        const auto stat = std::find_if(tenant.extra.begin(), tenant.extra.end(), [&](const PolicyStat& s) { return s.name == name; });
        cells.push_back(stat != tenant.extra.end() ? std::to_string(stat->value) : "");
      }
      table.rows.push_back(std::move(cells));
    }
  }
  return table;
}

}  // namespace allocsim
