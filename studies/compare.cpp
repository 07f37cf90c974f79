#include "studies/compare.hpp"

#include "sim/error.hpp"

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

}  // namespace allocsim
