#include "studies/replay_log.hpp"

#include <algorithm>
#include <memory>

#include "sim/engine.hpp"
#include "sim/error.hpp"
#include "sim/observer.hpp"
#include "workloads/catalogue.hpp"
#include "workloads/rmm_log.hpp"

namespace allocsim {
namespace {

// Every OOM's event, not only the first kMaxOomRecords the result keeps.
class OomEvents final : public Observer {
 public:
  void on_event(const Sample&) override {}
  void on_oom(const OomRecord& record) override { events.push_back(record.event); }
  std::vector<std::size_t> events;
};

}  // namespace

LogReplay replay_log(const Trace& trace, std::span<const std::size_t> failure_events,
                     std::span<const PolicyMaker> policies, const DeviceSpec& device, const ExportFiles& exports,
                     bool record) {
  if (exports.any() && policies.size() != 1) {
    throw Error("--memory-viz and --chrome-trace export one replay: give one --policy (" +
                std::to_string(policies.size()) + " given)");
  }
  std::vector<std::size_t> expected(failure_events.begin(), failure_events.end());
  std::sort(expected.begin(), expected.end());
  const auto shared = std::make_shared<const Trace>(trace);
  LogReplay replay;
  replay.events = trace.events.size();
  replay.failures = expected.size();
  replay.device = device;
  for (const PolicyMaker& policy : policies) {
    Scenario scenario;
    scenario.device = device;
    scenario.on_oom = OnOom::continue_run;
    scenario.tenants.push_back(TenantSpec{shared, policy, 0});
    OomEvents ooms;
    std::vector<Observer*> observers{&ooms};
    std::shared_ptr<RunRecorders> recorders;
    if (record) {
      recorders = std::make_shared<RunRecorders>();
      for (Observer* observer : recorders->observers()) observers.push_back(observer);
    }
    LogReplayOutcome outcome{policy.text, run_and_export(scenario, exports, observers), scenario, recorders, 0, 0};
    for (const std::size_t event : ooms.events) {
      if (std::binary_search(expected.begin(), expected.end(), event)) {
        ++outcome.failures_reproduced;
      } else {
        ++outcome.ooms_elsewhere;
      }
    }
    replay.outcomes.push_back(std::move(outcome));
  }
  return replay;
}

LogReplay replay_log_file(const std::string& path, std::span<const PolicyMaker> policies, const DeviceSpec& device,
                          const LoadOptions& options, const ExportFiles& exports, bool record) {
  const ReaderInfo& reader = find_reader(path);
  LogReplay replay;
  if (reader.holds == Holds::failures && !options.cuda_device) {
    const RmmLog log = read_rmm_log_file(path);
    std::vector<std::size_t> failures;
    for (const RmmFailure& failure : log.failures) failures.push_back(failure.event);
    replay = replay_log(log.trace, failures, policies, device, exports, record);
  } else {
    replay = replay_log(reader.load(path, options), {}, policies, device, exports, record);
  }
  replay.reader = reader.name;
  return replay;
}

}  // namespace allocsim
