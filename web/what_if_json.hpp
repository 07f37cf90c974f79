// The browser page's answer for one recording: replay's what-if (studies/replay_from_recording)
// as JSON, the same numbers the command line's `allocsim replay` prints and writes to --csv.
#pragma once

#include <optional>
#include <span>
#include <string>

#include <nlohmann/json.hpp>

#include "sim/units.hpp"
#include "studies/replay_from_recording.hpp"
#include "workloads/torch_recording.hpp"

namespace allocsim {

// Contract:
// - replays `recording` through each of `policies` as `allocsim replay FILE --policy ...
//   [--capacity ...]` does (replay_from_recording), and returns: the recording's summary and
//   its PYTORCH_CUDA_ALLOC_CONF (alloc_conf; settings_recorded: whether the snapshot had them),
//   the capacity and why, replay-check's verdict, one object per side (the recorded run
//   first) with its peaks, segments reserved, OOM count, first OOM and its kind, each
//   policy that could not replay and why, and the --csv file's text.
// - throws Error as the command line does (a recording it cannot rebuild); `policies` were read
//   where the page asked for them.
nlohmann::json what_if_json(const TorchRecording& recording, const std::string& name,
                            std::span<const RecordingPolicy> policies, std::optional<Bytes> capacity);

}  // namespace allocsim
