// What allocsim.capture() asks of the libraries: its events built into a Trace with module
// names and steps (TraceBuilder validates each), the CUDA-only allocations from the zoo's own
// rules (workloads/model/runtime_allocations, lower_conv), a device preset's figures for the
// torch.cuda shims, and the --memory-viz export of a replay (studies/run_exports).
#include <cstdint>
#include <string>
#include <vector>

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "policies/registry.hpp"
#include "python/bindings.hpp"
#include "sim/error.hpp"
#include "sim/trace.hpp"
#include "studies/run_exports.hpp"
#include "studies/scenario_choice.hpp"
#include "workloads/model/graph.hpp"
#include "workloads/model/lower.hpp"
#include "workloads/model/runtime_allocations.hpp"

namespace py = pybind11;

namespace allocsim::python {
namespace {

// One event per entry: op 0 alloc (bytes, tag, layer), 1 free (id: the allocation's index in
// order of allocs), 2 release. `step_starts`: the event index at which each step ended (the last may
// be the end): a trace with any has its first step begin at event 0.
std::shared_ptr<Trace> capture_trace(const std::vector<std::uint8_t>& ops, const std::vector<std::uint64_t>& values,
                                     const std::vector<std::uint8_t>& tags, const std::vector<std::uint32_t>& layers,
                                     const std::vector<std::string>& layer_names,
                                     const std::vector<std::size_t>& step_starts, const std::string& name) {
  if (ops.size() != values.size() || ops.size() != tags.size() || ops.size() != layers.size()) {
    throw Error("capture: columns of different lengths");
  }
  TraceBuilder builder(TraceInfo(name, "capture"));
  builder.reserve(ops.size());
  std::vector<AllocId> ids;
  if (!step_starts.empty()) builder.begin_step();  // the first step starts at event 0
  std::size_t next_step = 0;
  for (std::size_t n = 0; n < ops.size(); ++n) {
    while (next_step < step_starts.size() && step_starts[next_step] <= n) {
      if (step_starts[next_step] == n && n > 0) builder.begin_step();
      ++next_step;
    }
    const auto time = static_cast<Nanos>(n);
    switch (ops[n]) {
      case 0:
        if (tags[n] >= kTagCount || layers[n] >= layer_names.size()) throw Error("capture: bad tag or layer");
        ids.push_back(builder.alloc(time, values[n], 0, static_cast<Tag>(tags[n]), layer_names[layers[n]]));
        break;
      case 1:
        if (values[n] >= ids.size()) throw Error("capture: free of an allocation not made");
        builder.free(time, ids[values[n]]);
        break;
      case 2: builder.release(time); break;
      default: throw Error("capture: op code " + std::to_string(ops[n]));
    }
  }
  return std::make_shared<Trace>(std::move(builder).finish());
}

Bytes conv_workspace(std::int64_t kernel, Bytes input_bytes, Bytes output_bytes, int pass) {
  if (pass < 0 || pass > 2) throw Error("conv pass is 0 forward, 1 backward_input, 2 backward_weight");
  ModelOp conv;
  conv.kind = OpKind::conv;
  conv.kernel = kernel;
  return conv_workspace_bytes(conv, input_bytes, output_bytes, static_cast<ConvPass>(pass));
}

py::dict device_figures(const std::string& preset) {
  DeviceChoice choice;
  choice.presets = preset;
  const DeviceSpec spec = chosen_device(choice);
  py::dict figures;
  figures["name"] = spec.name;
  figures["capacity"] = spec.capacity;
  figures["context"] = spec.context_overhead;
  figures["compute_capability"] = spec.compute_capability;
  return figures;
}

void memory_viz(const std::shared_ptr<Trace>& trace, const std::string& preset, const std::string& policy,
                const std::string& path) {
  Scenario scenario;
  DeviceChoice choice;
  choice.presets = preset;
  scenario.device = chosen_device(choice);
  scenario.tenants.push_back(TenantSpec{trace, policy_maker(policy), 0});
  py::gil_scoped_release unlocked;
  run_and_export(scenario, ExportFiles{path, ""});
}

}  // namespace

void bind_capture(py::module_& module) {
  module.def("_capture_trace", &capture_trace);
  module.def("_cublas_workspace_bytes", &cublas_workspace_bytes);
  module.def("_conv_workspace_bytes", &conv_workspace);
  module.def("_cudnn_benchmark_trial_bytes", &cudnn_benchmark_trial_bytes);
  module.def("_device_figures", &device_figures);
  module.def("_memory_viz", &memory_viz);
}

}  // namespace allocsim::python
