// One run as the Python package holds it (allocsim.Result wraps it): the scenario, its
// result, and what a timeline or report needs. A run made here can be replayed again with
// observers (the same inputs give the same result), so a plain run pays for no observer;
// a replay from a recording keeps its recorders instead, since its policies start from
// the recorded state.
#pragma once

#include <map>
#include <memory>
#include <span>
#include <string>

#include <pybind11/pybind11.h>

#include "sim/engine.hpp"
#include "studies/run_report.hpp"

namespace allocsim::python {

class RunHandle {
 public:
  RunHandle(Scenario scenario, std::map<std::string, pybind11::object> python_policies);  // to be run
  RunHandle(Scenario scenario, RunResult result, std::shared_ptr<RunRecorders> recorders, std::string label);  // ran

  void run();  // releases the GIL unless a tenant's policy is Python
  const RunResult& result() const { return result_; }
  const Scenario& scenario() const { return scenario_; }
  const std::string& label() const { return label_; }
  // The recorders of a report, from a second replay the first time they are asked for.
  const RunRecorders& recorders();

 private:
  RunResult replay(std::span<Observer* const> observers);

  Scenario scenario_;
  std::map<std::string, pybind11::object> python_policies_;  // by the spec text the scenario gives them
  // A policy given as an instance runs as it is the first time; a second replay (for the
  // timeline, the report) runs a copy made before the first, so it starts as that did.
  std::map<std::string, pybind11::object> pristine_;
  bool ran_ = false;
  RunResult result_;
  std::shared_ptr<RunRecorders> recorders_;
  std::string label_;
};

}  // namespace allocsim::python
