// The scenario of one run, built in one place for `allocsim run` and allocsim.run: the
// device chosen (or, for a PyTorch recording run alone, the card it ran on), each tenant's
// workload loaded once however often it is named (or streamed, or loaded on a thread of
// its own while the replay runs what is read), each with its policy and start.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "sim/engine.hpp"
#include "studies/scenario_choice.hpp"
#include "workloads/catalogue.hpp"

namespace allocsim {

struct RunTenant {
  WorkloadSpec workload;  // a spec, a file, or a trace held in memory (the Python package's)
  PolicyMaker policy;
  Nanos start = 0;
};

struct RunChoice {
  std::vector<RunTenant> tenants;
  DeviceChoice device;
  OnOom on_oom = OnOom::stop;
  bool check = false;
  bool stream = false;          // files and the random generator replayed without loading them
  bool overlap_load = false;    // a trace file loads on a thread of its own while the replay runs
  bool recorded_card = false;   // a recording alone, with no device chosen, runs on its card
  std::optional<std::int64_t> batch;  // every model workload at this batch (its _bN token)
  std::optional<int> cuda_device;     // a PyTorch snapshot's device
};

struct RunSetup {
  Scenario scenario;
  std::string device_note;              // which card a recording's run took, and why; or ""
  std::vector<std::string> recordings;  // the PyTorch snapshots among the workloads, once each
};

// Error naming the bad workload, batch or device.
RunSetup run_scenario(const RunChoice& choice);

// With neither a device preset nor a capacity, one recording's run takes the card it ran
// on where the recording says (what it could hold at its OOM: studies/replay_from_recording),
// read once into `traces`; the note says which device the run used and why. Empty when the
// user chose the device or no recording runs alone.
std::string recorded_device(const RunChoice& choice, DeviceSpec& device,
                            std::map<std::string, std::shared_ptr<const Trace>>& traces);

}  // namespace allocsim
