#include "web/what_if_json.hpp"

#include <sstream>

#include "studies/replay_from_recording.hpp"

namespace allocsim {

using nlohmann::json;

json what_if_json(const TorchRecording& recording, const std::string& name, std::span<const RecordingPolicy> policies,
                  std::optional<Bytes> capacity) {
  const WhatIf what_if = replay_from_recording(recording, policies, capacity);
  json answer{{"recording",
               {{"name", name},
                {"device", recording.device},
                {"format", recording.format},
                {"events", recording.trace.events.size()},
                {"blocks_live_at_start", recording.preexisting.size()}}},
              {"capacity_source", what_if.capacity_source},
              {"replay_check", what_if.replay_check_divergence ? "diverged" : "exact"},
              {"replay_check_divergence",
               what_if.replay_check_divergence ? json(*what_if.replay_check_divergence) : json(nullptr)},
              {"recorded_oom", what_if.recorded_oom()},
              // PYTORCH_CUDA_ALLOC_CONF as the program set it: the page's line for another
              // setting keeps its other keys, as the replay kept the recorded settings.
              {"alloc_conf", recording.settings.conf},
              {"settings_recorded", recording.settings.recorded},
              {"releases_in_allocs", what_if.releases_in_allocs}};
  // One object per side, the recording's first: every field of the what-if's column table by
  // its CSV name (bytes as integers), and under "text" as the command line's table shows it.
  answer["sides"] = what_if_sides_json(what_if, name);
  answer["columns"] = columns_legend(what_if_columns());
  // The side to take and what to set in PyTorch for it, as the command line's replay says.
  const std::optional<std::size_t> best = what_if.best();
  answer["best"] = best ? json(*best + 1) : json(nullptr);  // sides[0] is the recording
  json failed = json::array();
  for (const WhatIf::Failed& failure : what_if.failed) failed.push_back({{"policy", failure.policy}, {"error", failure.error}});
  answer["failed"] = failed;
  std::ostringstream csv;
  write_what_if_csv(csv, what_if, name);
  answer["csv"] = csv.str();
  return answer;
}

}  // namespace allocsim
