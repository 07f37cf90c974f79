// The browser page's charts for one recording: the data `allocsim replay FILE --policy ...
// --report` draws (studies/run_report), for the settings the page shows side by side.
#pragma once

#include <optional>
#include <span>
#include <string>

#include "sim/units.hpp"
#include "studies/replay_from_recording.hpp"
#include "workloads/torch_recording.hpp"

namespace allocsim {

// Contract:
// - replays `recording` through each of `policies` with the report's recorders, as
//   `allocsim replay NAME --policy P,Q [--capacity C] --report F` does, and returns the JSON
//   document that command's page carries (run_report_data): the same title, lanes, timelines,
//   memory maps and OOMs; `command` is the command line that page would show.
// - throws Error as the command line does.
std::string what_if_report(const TorchRecording& recording, const std::string& name,
                           std::span<const RecordingPolicy> policies, std::optional<Bytes> capacity);

}  // namespace allocsim
