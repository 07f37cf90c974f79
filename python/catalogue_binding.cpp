// allocsim.policies(), workloads(), devices() and explain(): the tables the commands list,
// as rows (lists of dicts the Python layer turns into DataFrames), and explain_oom's JSON.
#include <string>
#include <string_view>

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "policies/registry.hpp"
#include "python/bindings.hpp"
#include "sim/device_presets.hpp"
#include "studies/oom_explanation.hpp"
#include "workloads/catalogue.hpp"
#include "workloads/model/zoo.hpp"

namespace py = pybind11;
using namespace pybind11::literals;

namespace allocsim::python {
namespace {

std::string_view framework_name(Framework framework) {
  switch (framework) {
    case Framework::torch: return "torch";
    case Framework::tf: return "tf";
    case Framework::jax: return "jax";
    case Framework::rmm: return "rmm";
    case Framework::cuda: return "cuda";
    case Framework::none: return "none";
  }
  return "none";
}

// {key: default} and {key: help}, in the table's order.
py::tuple parameters(std::span<const ParamInfo> params) {
  py::dict defaults;
  py::dict help;
  for (const ParamInfo& param : params) {
    const py::str key(std::string(param.key));
    defaults[key] = std::string(param.default_value);
    help[key] = std::string(param.help);
  }
  return py::make_tuple(defaults, help);
}

py::list policy_rows() {
  py::list rows;
  for (const PolicyInfo& info : all_policies()) {
    const py::tuple params = parameters(info.params);
    rows.append(py::dict("name"_a = std::string(info.name), "alias"_a = std::string(info.alias),
                         "framework"_a = std::string(framework_name(info.framework)), "models"_a = std::string(info.models),
                         "summary"_a = std::string(info.summary), "parameters"_a = params[0], "help"_a = params[1]));
  }
  return rows;
}

py::list workload_rows() {
  py::list rows;
  for (const WorkloadInfo& info : all_workloads()) {
    const py::tuple params = parameters(info.params);
    rows.append(py::dict("name"_a = std::string(info.name), "kind"_a = "generator", "summary"_a = std::string(info.summary),
                         "example"_a = std::string(info.example), "parameters"_a = params[0], "help"_a = params[1]));
  }
  const std::string tokens = model_spec_tokens();
  for (const ZooModel& model : zoo()) {
    rows.append(py::dict("name"_a = std::string(model.name), "kind"_a = "model", "summary"_a = std::string(model.summary),
                         "example"_a = std::string(model.name) + "_b8", "parameters"_a = py::dict(),
                         "help"_a = py::dict("tokens"_a = tokens)));
  }
  for (const ReaderInfo& reader : all_readers()) {
    rows.append(py::dict("name"_a = std::string(reader.name), "kind"_a = "reader", "summary"_a = std::string(reader.summary),
                         "example"_a = "", "parameters"_a = py::dict(), "help"_a = py::dict()));
  }
  return rows;
}

py::list device_rows() {
  py::list rows;
  for (const DevicePreset& preset : all_devices()) {
    rows.append(py::dict("name"_a = std::string(preset.name), "summary"_a = std::string(preset.summary),
                         "capacity_bytes"_a = preset.capacity, "compute_capability"_a = preset.compute_capability,
                         "context_overhead_bytes"_a = preset.context_overhead,
                         "capacity_source"_a = std::string(preset.capacity_source)));
  }
  return rows;
}

}  // namespace

void bind_catalogues(py::module_& module) {
  module.def("_policy_rows", &policy_rows);
  module.def("_workload_rows", &workload_rows);
  module.def("_device_rows", &device_rows);
  module.def("_explain_json", [](const std::string& text) { return explanation_json(explain_oom(text)); });
}

}  // namespace allocsim::python
