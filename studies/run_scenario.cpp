#include "studies/run_scenario.hpp"

#include <algorithm>
#include <map>

#include "sim/error.hpp"
#include "sim/report.hpp"
#include "studies/replay_from_recording.hpp"
#include "workloads/model/model_spec.hpp"
#include "workloads/torch_recording.hpp"

namespace allocsim {

std::string recorded_device(const RunChoice& choice, DeviceSpec& device,
                            std::map<std::string, std::shared_ptr<const Trace>>& traces) {
  if (!choice.recorded_card || !choice.device.presets.empty() || !choice.device.capacities.empty() ||
      choice.tenants.size() != 1) {
    return {};
  }
  const WorkloadSpec& workload = choice.tenants.front().workload;
  const FileChoice* file = workload.file();
  if (!file || file->reader->holds != Holds::allocator_state) return {};
  const std::string default_device = "the default device (" + format_bytes(device.capacity) + ")";
  if (choice.stream) {
    return "with --stream the recording is not read ahead for the card it ran on: " + default_device +
           "; --device or --capacity sets it";
  }
  TorchRecording recording = read_torch_recording(file->path, choice.cuda_device);
  const std::optional<Bytes> could_hold = recorded_capacity(recording);
  traces[workload.text] = std::make_shared<const Trace>(std::move(recording.trace));
  if (!could_hold) {
    return "the recording ran without an OOM and does not say which card it ran on: " + default_device +
           "; --device or --capacity sets it";
  }
  device.name = "recorded";
  device.capacity = *could_hold + device.context_overhead;
  return "the recorded card, as far as the recording says: what the run could hold when it ran out of memory (its "
         "reserved bytes at the OOM plus the device_free PyTorch recorded); --device or --capacity sets another";
}

RunSetup run_scenario(const RunChoice& choice) {
  RunSetup setup;
  Scenario& scenario = setup.scenario;
  scenario.device = chosen_device(choice.device);
  scenario.on_oom = choice.on_oom;
  scenario.check = choice.check;
  std::map<std::string, std::shared_ptr<const Trace>> traces;  // a workload named twice loads once
  setup.device_note = recorded_device(choice, scenario.device, traces);
  std::map<std::string, std::shared_ptr<const BackgroundTrace>> loading;
  for (const RunTenant& tenant : choice.tenants) {
    const WorkloadSpec& workload = tenant.workload;
    if (workload.held()) {  // as it is: no --batch, no stream, no copy
      scenario.tenants.push_back(TenantSpec{load_shared_workload(workload), tenant.policy, tenant.start});
      continue;
    }
    std::optional<ModelSpec> batched;  // the model workload at --batch
    if (choice.batch) {
      if (*choice.batch < 1 || !workload.model()) throw Error("--batch needs a batch of 1 or more and a model workload");
      batched = *workload.model();
      set_model_token(*batched, model_token("b"), *choice.batch, workload.text);
    }
    const FileChoice* file = workload.file();
    if (file && file->reader->holds == Holds::allocator_state &&
        std::find(setup.recordings.begin(), setup.recordings.end(), file->path) == setup.recordings.end()) {
      setup.recordings.push_back(file->path);
    }
    if (choice.stream) {
      scenario.tenants.push_back(
          TenantSpec::from_source(batched ? stream_workload(*batched) : stream_workload(workload), tenant.policy, tenant.start));
      continue;
    }
    const LoadOptions load_options{choice.cuda_device, scenario.device.compute_capability};
    if (choice.overlap_load && file && !traces.contains(workload.text)) {
      auto& load = loading[file->path];
      if (!load) load = load_in_background(*file, load_options);
      scenario.tenants.push_back(TenantSpec::from_source(load, tenant.policy, tenant.start));
      continue;
    }
    auto& trace = traces[workload.text];
    if (!trace) {
      trace = std::make_shared<const Trace>(batched ? load_workload(*batched, load_options) : load_workload(workload, load_options));
    }
    scenario.tenants.push_back(TenantSpec{trace, tenant.policy, tenant.start});
  }
  return setup;
}

}  // namespace allocsim
