#include "web/what_if_json.hpp"

#include <sstream>

#include "sim/oom.hpp"
#include "sim/verdict.hpp"
#include "studies/replay_from_recording.hpp"

namespace allocsim {
namespace {

using nlohmann::json;

// Bytes as a number and as the command line prints them: JavaScript's numbers hold whole
// numbers exactly only up to 2^53, the text holds any.
void put_bytes(json& object, const std::string& key, Bytes bytes) {
  object[key] = bytes;
  object[key + "_text"] = format_bytes_exact(bytes);
}

json side_json(const WhatIfOutcome& outcome, bool recorded) {
  json side{{"side", recorded ? "recorded" : "simulated"}, {"policy", outcome.policy}, {"start", outcome.start},
            {"device_allocs", outcome.device_allocs}, {"ooms", outcome.ooms}};
  put_bytes(side, "peak_reserved", outcome.peak_reserved);
  put_bytes(side, "peak_allocated", outcome.peak_allocated);
  side["first_oom"] = outcome.first_oom ? json(*outcome.first_oom) : json(nullptr);
  // The recording holds no kind for its OOMs; a replay classifies each (sim/oom), under its
  // two names: the run verdict and the kind at the request, as `allocsim replay` prints them.
  side["first_oom_kind"] = nullptr;
  side["first_oom_request_kind"] = nullptr;
  side["torch_setting"] = outcome.torch_setting;
  side["run_verdict"] = "-";
  side["at_the_request"] = "-";
  if (!recorded && !outcome.run.tenants.empty()) {
    const TenantResult& tenant = outcome.run.tenants.front();
    if (const OomRecord* oom = tenant.first_oom()) {
      side["first_oom_kind"] = std::string(name_of(oom->kind));
      side["first_oom_request_kind"] = std::string(name_of(oom->request_kind));
    }
    side["run_verdict"] = std::string(verdict_word(verdict_of(outcome.run, tenant)));
    side["at_the_request"] = describe_request_kinds(tenant);
  }
  return side;
}

}  // namespace

json what_if_json(const TorchRecording& recording, const std::string& name, std::span<const std::string> policies,
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
  put_bytes(answer, "capacity", what_if.capacity);
  json sides = json::array({side_json(what_if.recorded, true)});
  for (const WhatIfOutcome& outcome : what_if.replayed) sides.push_back(side_json(outcome, false));
  answer["sides"] = sides;
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
