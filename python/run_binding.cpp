// allocsim.run, replay and replay_check: scenarios built as the commands build them
// (studies/run_scenario, the registry, the catalogue), replayed by the engine, and
// their results as the JSON writer gives them, so Result carries every field it carries.
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "policies/registry.hpp"
#include "python/bindings.hpp"
#include "python/python_policy.hpp"
#include "python/run_handle.hpp"
#include "sim/error.hpp"
#include "sim/report.hpp"
#include "sim/units.hpp"
#include "studies/replay_check.hpp"
#include "studies/replay_from_recording.hpp"
#include "studies/replay_log.hpp"
#include "studies/report_page.hpp"
#include "studies/run_scenario.hpp"
#include "studies/scenario_choice.hpp"
#include "workloads/catalogue.hpp"
#include "workloads/snapshot_import.hpp"
#include "workloads/torch_recording.hpp"

namespace py = pybind11;
using namespace pybind11::literals;

namespace allocsim::python {
namespace {

// One tenant as the Python layer passes it, each spec read once, where it arrives: the
// workload (a spec or path read here, or a Trace held), the policy (a PolicySpec that
// _check_policy or _parse_tenant read; or a Python policy, an allocsim.Policy subclass or
// instance, that the RunHandle makes: `policy` its name alone), the start.
struct TenantArgument {
  WorkloadSpec workload;
  PolicyMaker policy;
  py::object python_policy;  // null for a registry policy
  Nanos start = 0;
};

WorkloadSpec workload_argument(const py::object& workload) {
  if (!py::isinstance<py::str>(workload)) {
    const auto trace = workload.cast<std::shared_ptr<Trace>>();
    return held_workload(trace->info.name, trace);
  }
  const std::string spec = workload.cast<std::string>();
  refuse_workload_list(spec);
  try {
    return parse_workload_spec(spec);
  } catch (const Error& error) {
    throw Error("workload: " + std::string(error.what()));
  }
}

// `policy`: a PolicySpec (_check_policy's), or a Python policy named `name`.
TenantArgument tenant_argument(const py::object& workload, const py::object& policy, std::string name, Nanos start) {
  TenantArgument tenant{workload_argument(workload), {}, {}, start};
  if (py::isinstance<PolicySpec>(policy)) {
    tenant.policy = policy.cast<const PolicySpec&>().maker();
  } else {
    tenant.policy.text = std::move(name);
    tenant.python_policy = policy;
  }
  return tenant;
}

std::shared_ptr<RunHandle> make_run(const std::vector<TenantArgument>& tenants, const DeviceChoice& device,
                                    const std::string& on_oom, bool check) {
  RunChoice choice;
  choice.device = device;
  chosen_device(device);  // a bad device is named before any workload is loaded
  if (on_oom != "stop" && on_oom != "continue") throw Error("on_oom is 'stop' or 'continue', not '" + on_oom + "'");
  choice.on_oom = on_oom == "stop" ? OnOom::stop : OnOom::continue_run;
  choice.check = check;
  std::map<std::string, py::object> python_policies;
  for (const TenantArgument& tenant : tenants) {
    choice.tenants.push_back(RunTenant{tenant.workload, tenant.policy, tenant.start});
    // A Python policy: the RunHandle makes it.
    if (tenant.python_policy) python_policies.emplace(tenant.policy.text, tenant.python_policy);
  }
  RunSetup setup;
  {
    py::gil_scoped_release unlocked;
    try {
      setup = run_scenario(choice);
    } catch (const Error& error) {
      throw Error("workload: " + std::string(error.what()));
    }
  }
  auto handle = std::make_shared<RunHandle>(std::move(setup.scenario), std::move(python_policies));
  handle->run();
  return handle;
}

std::string result_json(const RunResult& result) {
  std::ostringstream out;
  write_json(out, result);
  return out.str();
}

py::dict breakdown(const RunResult& result, std::size_t tenant) {
  const Breakdown& at_peak = result.tenants.at(tenant).at_peak;
  py::dict by_tag;
  for (int k = 0; k < kTagCount; ++k) {
    const Bytes bytes = at_peak.by_tag[static_cast<std::size_t>(k)];
    if (bytes > 0) by_tag[py::str(std::string(name_of(static_cast<Tag>(k))))] = bytes;
  }
  py::list layers;
  for (const auto& [name, bytes] : at_peak.top_layers) layers.append(py::make_tuple(name, bytes));
  return py::dict("event"_a = at_peak.event, "by_tag"_a = by_tag, "top_layers"_a = layers,
                  "total_bytes"_a = at_peak.total(), "text"_a = describe_breakdown(at_peak));
}

py::dict timeline(RunHandle& handle, std::size_t tenant) {
  std::vector<Sample> mine;
  for (const Sample& sample : handle.recorders().timeline.points()) {
    if (sample.tenant == tenant) mine.push_back(sample);
  }
  const auto n = static_cast<py::ssize_t>(mine.size());
  py::array_t<std::uint64_t> time(n), event(n), allocated(n), reserved(n), device_used(n);
  for (py::ssize_t k = 0; k < n; ++k) {
    const Sample& sample = mine[static_cast<std::size_t>(k)];
    time.mutable_at(k) = sample.time;
    event.mutable_at(k) = sample.event;
    allocated.mutable_at(k) = sample.allocated;
    reserved.mutable_at(k) = sample.reserved;
    device_used.mutable_at(k) = sample.device_used;
  }
  return py::dict("time_ns"_a = time, "event"_a = event, "allocated_bytes"_a = allocated, "reserved_bytes"_a = reserved,
                  "device_used_bytes"_a = device_used);
}

void write_report(RunHandle& handle, const std::string& path, const std::string& title) {
  const RunRecorders& recorders = handle.recorders();
  const ReportedRun reported{handle.label(), handle.scenario(), handle.result(), recorders};
  const std::string heading = title.empty() ? "allocsim: " + run_title(handle.result()) : title;
  write_report_page(path, heading, run_report_data(heading, "python: allocsim", {&reported, 1}));
}

std::optional<Bytes> capacity_of(const std::optional<std::string>& capacity) {
  if (!capacity) return std::nullopt;
  const Bytes bytes = parse_bytes(*capacity);
  if (bytes == 0) throw Error("capacity must be more than 0 bytes");
  return bytes;
}

// A replay's policies as the Python layer passes them, in order: a spec list (str), or a
// policy written in Python as (name, class or instance). A Python policy's maker borrows the
// object (it is made without the GIL held, which it then takes): the caller's list keeps it
// alive while the replay runs, and a replay keeps its recorders, so it is never made again.
std::vector<RecordingPolicy> replay_policies(const py::list& given) {
  std::vector<RecordingPolicy> policies;
  for (const py::handle item : given) {
    if (py::isinstance<py::str>(item)) {
      for (PolicySpec& spec : parse_policy_lists(std::vector<std::string>{item.cast<std::string>()})) {
        policies.emplace_back(std::move(spec));
      }
      continue;
    }
    const py::tuple pair = py::reinterpret_borrow<py::tuple>(item);
    const std::string name = pair[0].cast<std::string>();
    const py::handle policy = pair[1];
    policies.emplace_back(PolicyMaker{name, [name, policy](Device& device) {
                                         const py::gil_scoped_acquire locked;
                                         return make_python_policy(py::reinterpret_borrow<py::object>(policy), device,
                                                                   name, nullptr);
                                       }});
  }
  return policies;
}

// One side of the what-if as a dict: every field of its column table by its CSV name.
py::dict side_dict(const WhatIfRow& row) {
  py::dict side;
  for (const Column<WhatIfRow>& column : what_if_columns()) {
    const MetricValue value = column.get(row);
    py::object cell = py::none();
    if (const auto* text = std::get_if<std::string>(&value)) cell = py::str(*text);
    if (const auto* integer = std::get_if<std::uint64_t>(&value)) cell = py::int_(*integer);
    if (const auto* real = std::get_if<double>(&value)) cell = py::float_(*real);
    side[py::str(std::string(column.name))] = cell;
  }
  return side;
}

py::dict replay_of_recording(const TorchRecording& recording, const std::string& recording_name, const py::list& given,
                             const std::optional<std::string>& capacity) {
  const std::vector<RecordingPolicy> policies = replay_policies(given);
  const std::optional<Bytes> bytes = capacity_of(capacity);
  std::optional<WhatIf> what_if;
  {
    py::gil_scoped_release unlocked;
    what_if.emplace(replay_from_recording(recording, policies, bytes, {}, true));
  }
  py::list runs;
  py::dict starts;  // how each replay began: the recorded segments adopted, or the live blocks placed
  for (WhatIfOutcome& outcome : what_if->replayed) {
    runs.append(std::make_shared<RunHandle>(outcome.scenario, outcome.run, outcome.recorders, outcome.policy));
    starts[py::str(outcome.policy)] = outcome.start;
  }
  py::list failed;
  for (const WhatIf::Failed& failure : what_if->failed) failed.append(py::make_tuple(failure.policy, failure.error));
  py::list sides;  // the recording's first, as the CSV's rows and the page's sides
  for (const WhatIfRow& row : what_if_rows(*what_if, recording_name)) sides.append(side_dict(row));
  return py::dict("runs"_a = runs, "starts"_a = starts, "failed"_a = failed, "capacity_bytes"_a = what_if->capacity,
                  "capacity_source"_a = what_if->capacity_source, "recorded"_a = sides[0], "sides"_a = sides,
                  "replay_check_divergence"_a = what_if->replay_check_divergence,
                  "events"_a = recording.trace.events.size(), "device"_a = recording.device);
}

py::dict replay_path(const std::string& path, const py::list& policies, const std::optional<std::string>& capacity,
                     std::optional<int> cuda_device) {
  if (find_reader(path).holds == Holds::allocator_state) {
    std::optional<TorchRecording> recording;
    {
      py::gil_scoped_release unlocked;
      recording.emplace(read_torch_recording(path, cuda_device));
    }
    return replay_of_recording(*recording, path, policies, capacity);
  }
  // A log (RMM's, our CSV): every policy from an empty allocator, as `allocsim replay LOG` does.
  DeviceSpec device;
  if (const std::optional<Bytes> bytes = capacity_of(capacity)) device.capacity = *bytes;
  LoadOptions options;
  options.cuda_device = cuda_device;
  std::vector<PolicyMaker> makers;
  for (const RecordingPolicy& policy : replay_policies(policies)) makers.push_back(policy.maker);
  std::optional<LogReplay> replay;
  {
    py::gil_scoped_release unlocked;
    replay.emplace(replay_log_file(path, makers, device, options, {}, true));
  }
  py::list runs;
  for (LogReplayOutcome& outcome : replay->outcomes) {
    runs.append(std::make_shared<RunHandle>(outcome.scenario, outcome.run, outcome.recorders, outcome.policy));
  }
  return py::dict("runs"_a = runs, "failed"_a = py::list(), "capacity_bytes"_a = device.capacity,
                  "events"_a = replay->events, "log_failures"_a = replay->failures);
}

py::dict check_recording(const TorchRecording& recording, const std::string& capacity) {
  const Bytes bytes = parse_bytes(capacity);
  if (bytes == 0) throw Error("capacity must be more than 0 bytes");
  std::optional<ReplayCheck> check;
  {
    py::gil_scoped_release unlocked;
    check.emplace(replay_check(recording, bytes));
  }
  return py::dict("exact"_a = check->exact(), "divergence"_a = check->divergence, "final_state"_a = check->final_state,
                  "policy"_a = check->policy, "events"_a = check->events, "preexisting"_a = check->preexisting,
                  "recorded_peak_reserved_bytes"_a = check->recorded_peak_reserved,
                  "simulated_peak_reserved_bytes"_a = check->simulated_peak_reserved,
                  "recorded_ooms"_a = check->recorded_ooms, "replayed_ooms"_a = check->replayed_ooms,
                  "settings_not_modelled"_a = check->settings_not_modelled,
                  "settings_without_effect"_a = check->settings_without_effect,
                  "ambiguous_sizes"_a = check->ambiguous_sizes);
}

}  // namespace

void bind_run(py::module_& module) {
  // A policy spec read once (_check_policy, _parse_tenant): what a tenant takes.
  py::class_<PolicySpec>(module, "_PolicySpec").def_property_readonly("text", [](const PolicySpec& spec) {
    return spec.text;
  });
  py::class_<TenantArgument>(module, "_Tenant").def(py::init(&tenant_argument));
  py::class_<RunHandle, std::shared_ptr<RunHandle>>(module, "Run")
      .def("json", [](const RunHandle& run) { return result_json(run.result()); })
      .def("breakdown", [](const RunHandle& run, std::size_t tenant) { return breakdown(run.result(), tenant); })
      .def("timeline", &timeline)
      .def("report", &write_report, "path"_a, "title"_a = "")
      .def("table", [](const RunHandle& run) {
        std::ostringstream out;
        write_table(out, run.result());
        return out.str();
      })
      .def_property_readonly("label", &RunHandle::label)
      .def_property_readonly("tenants", [](const RunHandle& run) { return run.result().tenants.size(); });
  module.def("_run", [](const std::vector<TenantArgument>& tenants, const std::string& device, const std::string& capacity,
                        const std::string& on_oom, bool check) {
    DeviceChoice choice;
    choice.presets = device;
    choice.capacities = capacity;
    return make_run(tenants, choice, on_oom, check);
  });
  module.def("_replay_path", &replay_path);
  module.def("_parse_tenant", [](const std::string& text) {
    TenantChoice tenant = parse_tenant(text);
    return TenantArgument{std::move(tenant.workload), tenant.policy.maker(), {}, tenant.start};
  });
  module.def("_parse_nanos", [](const std::string& text) { return parse_nanos(text); });
  module.def("_parse_bytes", [](const std::string& text) { return parse_bytes(text); });
  module.def("_check_policy", [](const std::string& spec) { return parse_policy_spec(spec); });
  module.def("_check_device", [](const std::string& device, const std::string& capacity) {
    DeviceChoice choice;
    choice.presets = device;
    choice.capacities = capacity;
    chosen_device(choice);
  });
  module.def("_replay_check_path", [](const std::string& path, const std::string& capacity, std::optional<int> cuda_device) {
    std::optional<TorchRecording> recording;
    {
      py::gil_scoped_release unlocked;
      recording.emplace(read_torch_recording(path, cuda_device));
    }
    return check_recording(*recording, capacity);
  });
  // A snapshot dict, pickled by the Python layer: read in memory, never written to disk.
  module.def("_replay_bytes", [](const py::bytes& data, const std::string& name, const py::list& policies,
                                 const std::optional<std::string>& capacity, std::optional<int> cuda_device) {
    const std::string pickle = data;
    std::optional<TorchRecording> recording;
    {
      py::gil_scoped_release unlocked;
      recording.emplace(read_torch_recording_bytes(pickle, name, cuda_device));
    }
    return replay_of_recording(*recording, name, policies, capacity);
  });
  // A snapshot dict as a workload of run: its trace, as `allocsim run FILE.pickle` reads the
  // file (every policy from an empty allocator, the blocks live at the start allocated first).
  module.def("_snapshot_trace", [](const py::bytes& data, const std::string& name, std::optional<int> cuda_device) {
    const std::string pickle = data;
    py::gil_scoped_release unlocked;
    return std::make_shared<Trace>(read_torch_recording_bytes(pickle, name, cuda_device).trace);
  });
  module.def("_replay_check_bytes", [](const py::bytes& data, const std::string& name, const std::string& capacity,
                                       std::optional<int> cuda_device) {
    const std::string pickle = data;
    std::optional<TorchRecording> recording;
    {
      py::gil_scoped_release unlocked;
      recording.emplace(read_torch_recording_bytes(pickle, name, cuda_device));
    }
    return check_recording(*recording, capacity);
  });
}

}  // namespace allocsim::python
