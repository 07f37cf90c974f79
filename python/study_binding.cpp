// allocsim.sweep, maxbatch, advise and compare: each study's typed options built from the
// Python keywords (studies/: SweepStudy, MaxBatchOptions, AdviseOptions, CompareOptions),
// the study run, and its rows returned as the cells of the CSV the command line writes
// (studies/study_table.hpp), from which the Python layer makes a DataFrame. Policies
// written in Python reach a study as policy makers in its options. The GIL is released
// while a study runs; SIGINT and SIGTERM go to sim/interrupt's handler for that time (one
// handler for every study running at once), so ^C stops a sweep between points with the
// rows that finished, and Python's handlers come back when the last study returns.
#include <algorithm>
#include <csignal>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "python/bindings.hpp"
#include "python/python_policy.hpp"
#include "sim/error.hpp"
#include "sim/interrupt.hpp"
#include "sim/trace.hpp"
#include "studies/advise.hpp"
#include "studies/alloc_conf_choice.hpp"
#include "studies/compare.hpp"
#include "studies/maxbatch_study.hpp"
#include "studies/parallel.hpp"
#include "studies/sweep_run.hpp"
#include "workloads/catalogue.hpp"

namespace py = pybind11;

namespace allocsim::python {
namespace {

// SIGINT and SIGTERM caught for the studies running: the first to start saves Python's
// handlers and installs sim/interrupt's, the last to return puts Python's back.
class CaughtSignals {
 public:
  CaughtSignals() {
    const std::lock_guard lock(mutex_);
    if (running_++ > 0) return;
    sigaction(SIGINT, nullptr, &interrupt_);
    sigaction(SIGTERM, nullptr, &terminate_);
    clear_interrupt();
    catch_interrupts();
  }
  ~CaughtSignals() {
    const std::lock_guard lock(mutex_);
    if (--running_ > 0) return;
    sigaction(SIGINT, &interrupt_, nullptr);
    sigaction(SIGTERM, &terminate_, nullptr);
    clear_interrupt();
  }
  CaughtSignals(const CaughtSignals&) = delete;
  CaughtSignals& operator=(const CaughtSignals&) = delete;

 private:
  static inline std::mutex mutex_;
  static inline int running_ = 0;
  static inline struct sigaction interrupt_ {};
  static inline struct sigaction terminate_ {};
};

// Keyword values as the Python layer spells them: each a list of texts (a repeatable
// option's values, or one text: a list joined by commas, a number, "true").
using Keywords = std::map<std::string, std::vector<std::string>>;

std::string option_name(const std::string& key) {
  std::string name = "--" + key;
  std::replace(name.begin(), name.end(), '_', '-');
  return name;
}

// The setters of one study's options, by keyword; an unknown keyword is an Error naming it.
class OptionSetters {
 public:
  using Setter = std::function<void(const std::vector<std::string>& values)>;

  OptionSetters& text(const std::string& key, std::string& field) {
    return add(key, [&field, key](const std::vector<std::string>& values) { field = one(key, values); });
  }
  OptionSetters& texts(const std::string& key, std::vector<std::string>& field) {
    return add(key, [&field](const std::vector<std::string>& values) { field.insert(field.end(), values.begin(), values.end()); });
  }
  template <typename Number>
  OptionSetters& number(const std::string& key, Number& field) {
    return add(key, [&field, key](const std::vector<std::string>& values) {
      const std::string& value = one(key, values);
      std::size_t used = 0;
      long long read = 0;
      try {
        read = std::stoll(value, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used == 0 || used != value.size()) throw Error(option_name(key) + ": " + value + " is not a whole number");
      field = static_cast<Number>(read);
    });
  }
  OptionSetters& flag(const std::string& key, bool& field) {
    return add(key, [&field, key](const std::vector<std::string>& values) { field = one(key, values) == "true"; });
  }
  OptionSetters& ignored(const std::string& key) {
    return add(key, [](const std::vector<std::string>&) {});
  }
  OptionSetters& device(DeviceChoice& device, bool with_profile) {
    text("device", device.presets).text("capacity", device.capacities).text("context", device.context);
    text("granularity", device.granularity);
    if (with_profile) text("device_profile", device.cost_profile);
    return *this;
  }

  void apply(const Keywords& keywords) const {
    for (const auto& [key, values] : keywords) {
      const auto found = setters_.find(key);
      if (found == setters_.end()) throw Error("unrecognised option '" + option_name(key) + "'");
      found->second(values);
    }
  }

 private:
  OptionSetters& add(const std::string& key, Setter setter) {
    setters_.emplace(key, std::move(setter));
    return *this;
  }
  static const std::string& one(const std::string& key, const std::vector<std::string>& values) {
    if (values.size() != 1) throw Error(option_name(key) + " takes one value");
    return values.front();
  }
  std::map<std::string, Setter> setters_;
};

// Policies written in Python, by the names the options give them, as policy makers. The
// handles are copied without touching reference counts (the makers are copied without the
// GIL); the caller's objects keep them alive until the study returns.
std::vector<PolicyMaker> given_policies(const std::map<std::string, py::object>& policies) {
  std::vector<PolicyMaker> makers;
  for (const auto& [name, policy] : policies) {
    makers.push_back(PolicyMaker{name, [name = name, policy = py::handle(policy)](Device& device) {
                                   const py::gil_scoped_acquire locked;
                                   return make_python_policy(py::reinterpret_borrow<py::object>(policy), device, name, nullptr);
                                 }});
  }
  return makers;
}

// Traces from Python (allocsim.Trace), by the names the options give them, as workloads held in memory.
using Traces = std::map<std::string, std::shared_ptr<Trace>>;

std::vector<WorkloadSpec> given_workloads(const Traces& traces) {
  std::vector<WorkloadSpec> workloads;
  for (const auto& [name, trace] : traces) workloads.push_back(held_workload(name, trace));
  return workloads;
}

// What a study returns to Python: the table's columns and rows, the lines it wrote
// (--alloc-conf's warnings), and why it stopped early ("" when it did not).
py::tuple answer(const StudyTable& table, const std::string& output, const std::string& stopped) {
  return py::make_tuple(table.columns, table.rows, output, stopped);
}

// Why a study that did not finish every unit stopped ("interrupted by SIGINT: 3 of 8 points
// finished"), or "" when it did or no signal came.
std::string stopped_after(std::size_t finished, std::size_t total, const char* units) {
  const int signal = interrupt_signal();
  if (signal == 0 || finished >= total) return {};
  return std::string("interrupted by ") + signal_name(signal) + ": " + std::to_string(finished) + " of " +
         std::to_string(total) + " " + units + " finished";
}

// Runs `study` without the GIL, with the signals caught: (table, stopped).
template <typename Study>
std::pair<StudyTable, std::string> run_caught(Study&& study) {
  const py::gil_scoped_release unlocked;
  const CaughtSignals caught;
  try {
    return study();
  } catch (const Interrupted& interrupted) {
    return {StudyTable{}, interrupted.what()};
  }
}

// The keywords applied to a study with policy lists: --alloc-conf's policy after the lists
// (its warnings on `output`), the Python policies given as makers.
void apply_with_policies(const OptionSetters& setters, const Keywords& keywords, const std::string& alloc_conf,
                         std::vector<std::string>& lists, std::vector<PolicyMaker>& given,
                         const std::map<std::string, py::object>& policies, std::ostream& output) {
  setters.apply(keywords);
  given = given_policies(policies);
  append_alloc_conf(lists, given, alloc_conf, output);
}

py::tuple sweep(const Keywords& keywords, const std::map<std::string, py::object>& policies, const Traces& traces) {
  SweepStudy study;
  SweepOptions& s = study.grid;
  std::string alloc_conf;
  int threads = 0;
  OptionSetters setters;
  setters.texts("workload", s.workloads).texts("policy", s.policies).texts("tenant", s.tenants).texts("param", s.params);
  setters.text("on_oom", s.on_oom).text("alloc_conf", alloc_conf).number("threads", threads).flag("timing", study.timing);
  setters.ignored("quiet").device(s.device, false);
  for (const ModelAxis& axis : model_axes()) setters.text(axis.name, s.model_axes[axis.name]);
  std::ostringstream output;
  apply_with_policies(setters, keywords, alloc_conf, s.policies, s.given_policies, policies, output);
  s.given_workloads = given_workloads(traces);
  study.threads = thread_count(threads);
  study.stop = [] { return interrupt_signal() != 0; };
  auto [table, stopped] = run_caught([&]() -> std::pair<StudyTable, std::string> {
    SweepOutcome outcome = run_sweep(study);
    return {std::move(outcome.table), stopped_after(outcome.finished, outcome.points, "points")};
  });
  return answer(table, output.str(), stopped);
}

py::tuple maxbatch(const Keywords& keywords, const std::map<std::string, py::object>& policies, const Traces& traces) {
  if (!traces.empty()) {
    throw Error("workload " + traces.begin()->first + " is a trace: maxbatch changes a model's batch (or give maxbatch a step_fn)");
  }
  MaxBatchOptions options;
  std::string alloc_conf;
  OptionSetters setters;
  setters.text("workload", options.workload).texts("policy", options.policies).number("limit", options.limit);
  setters.number("neighbours", options.neighbours).number("accumulation", options.accumulation);
  setters.number("threads", options.threads).text("alloc_conf", alloc_conf).device(options.device, false);
  std::ostringstream output;
  apply_with_policies(setters, keywords, alloc_conf, options.policies, options.given_policies, policies, output);
  MaxBatchStudy study = maxbatch_study(options);
  study.stop = [] { return interrupt_signal() != 0; };
  auto [table, stopped] = run_caught([&]() -> std::pair<StudyTable, std::string> {
    MaxBatchResults results = plan_maxbatch(study);
    search_maxbatch(study, results);
    StudyTable found = maxbatch_table(results);
    const std::size_t finished = found.rows.size();
    return {std::move(found), stopped_after(finished, results.rows.size(), "searches")};
  });
  return answer(table, output.str(), stopped);
}

py::tuple advise(const Keywords& keywords, const std::map<std::string, py::object>& policies, const Traces& traces) {
  if (!policies.empty()) throw Error("--policy: advise changes a built-in policy's settings; a policy written in Python has none it knows");
  AdviseOptions options;
  OptionSetters setters;
  setters.text("workload", options.workload).text("framework", options.framework).text("policy", options.policy);
  setters.text("alloc_conf", options.alloc_conf).texts("tenant", options.tenants).number("ranks", options.ranks);
  setters.number("threads", options.threads).device(options.device, true);
  setters.apply(keywords);
  options.given_workloads = given_workloads(traces);
  std::ostringstream output;
  const AdviseStudy study = advise_study(options, output);
  auto [table, stopped] = run_caught([&]() -> std::pair<StudyTable, std::string> { return {advise_table(run_advise(study)), ""}; });
  return answer(table, output.str(), stopped);
}

py::tuple compare(const Keywords& keywords, const std::map<std::string, py::object>& policies, const Traces& traces) {
  CompareOptions options;
  std::string alloc_conf;
  OptionSetters setters;
  setters.text("workload", options.workload).texts("policy", options.policies).text("on_oom", options.on_oom);
  setters.text("alloc_conf", alloc_conf).device(options.device, true);
  std::ostringstream output;
  apply_with_policies(setters, keywords, alloc_conf, options.policies, options.given_policies, policies, output);
  options.given_workloads = given_workloads(traces);
  const CompareStudy study = compare_study(options);
  auto [table, stopped] = run_caught([&]() -> std::pair<StudyTable, std::string> {
    return {compare_table(run_compare(study).runs), ""};
  });
  return answer(table, output.str(), stopped);
}

}  // namespace

void bind_studies(py::module_& module) {
  const auto policies = std::map<std::string, py::object>();
  const auto traces = Traces();
  module.def("_sweep", &sweep, py::arg("options"), py::arg("policies") = policies, py::arg("traces") = traces);
  module.def("_maxbatch", &maxbatch, py::arg("options"), py::arg("policies") = policies, py::arg("traces") = traces);
  module.def("_advise", &advise, py::arg("options"), py::arg("policies") = policies, py::arg("traces") = traces);
  module.def("_compare", &compare, py::arg("options"), py::arg("policies") = policies, py::arg("traces") = traces);
}

}  // namespace allocsim::python
