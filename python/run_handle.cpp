#include "python/run_handle.hpp"

#include <optional>
#include <utility>

#include "policies/registry.hpp"
#include "python/python_policy.hpp"
#include "sim/error.hpp"

namespace py = pybind11;

namespace allocsim::python {

RunHandle::RunHandle(Scenario scenario, std::map<std::string, py::object> python_policies)
    : scenario_(std::move(scenario)), python_policies_(std::move(python_policies)) {
  for (const auto& [name, policy] : python_policies_) {
    if (py::isinstance<py::type>(policy)) continue;
    try {
      pristine_.emplace(name, py::module_::import("copy").attr("deepcopy")(policy));
    } catch (py::error_already_set&) {
      // Not copyable: the run itself works; a second replay says to pass the class.
    }
  }
}

RunHandle::RunHandle(Scenario scenario, RunResult result, std::shared_ptr<RunRecorders> recorders, std::string label)
    : scenario_(std::move(scenario)), result_(std::move(result)), recorders_(std::move(recorders)), label_(std::move(label)) {}

void RunHandle::run() {
  result_ = replay({});
  ran_ = true;
}

const RunRecorders& RunHandle::recorders() {
  if (!recorders_) {
    auto recorders = std::make_shared<RunRecorders>();
    replay(recorders->observers());
    recorders_ = std::move(recorders);
  }
  return *recorders_;
}

RunResult RunHandle::replay(std::span<Observer* const> observers) {
  // A Python policy's tenant carries its name only: it is made here, afresh for each replay.
  Scenario scenario = scenario_;
  for (TenantSpec& tenant : scenario.tenants) {
    const auto python = python_policies_.find(tenant.policy.text);
    if (python == python_policies_.end()) continue;
    tenant.policy.make = [this, python, trace = tenant.trace](Device& device) -> MadePolicy {
      py::object policy = python->second;
      if (ran_ && !py::isinstance<py::type>(policy)) {
        const auto pristine = pristine_.find(python->first);
        if (pristine == pristine_.end()) {
          throw Error("policy " + python->first + ": an instance that copy.deepcopy cannot copy runs once; pass its "
                      "class for the timeline and the report, which replay the run again");
        }
        policy = py::module_::import("copy").attr("deepcopy")(pristine->second);
      }
      return make_python_policy(policy, device, python->first, trace);
    };
  }
  if (!python_policies_.empty()) return allocsim::run(scenario, observers);
  py::gil_scoped_release unlocked;  // C++ policies only: other Python threads run meanwhile
  return allocsim::run(scenario, observers);
}

}  // namespace allocsim::python
