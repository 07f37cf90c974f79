#include "studies/replay_log.hpp"

#include <algorithm>
#include <array>
#include <memory>
#include <stdexcept>

#include "sim/engine.hpp"
#include "sim/error.hpp"
#include "sim/observer.hpp"
#include "sim/oom.hpp"
#include "sim/verdict.hpp"
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

const TenantResult& replayed(const LogReplayRow& r) { return r.outcome->run.tenants.front(); }
MetricValue log_count(std::size_t n) { return std::uint64_t{n}; }

// The run metrics' names (sim/metrics.cpp) where the CSV has the field (in_csv); the
// terminal's table shows every one, a row each, in this order.
const std::array<Column<LogReplayRow>, 11> kLogColumns{{
    {.name = "policy", .unit = Unit::text, .help = "the policy spec",
     .get = [](const LogReplayRow& r) -> MetricValue { return replayed(r).policy; }},
    {.name = "peak_reserved_bytes", .unit = Unit::bytes, .help = "most bytes the policy held from the device",
     .get = [](const LogReplayRow& r) -> MetricValue { return replayed(r).peak_reserved; },
     .shown = [](const LogReplayRow& r) { return format_bytes_exact(replayed(r).peak_reserved); },
     .label = "peak reserved"},
    {.name = "peak_allocated_bytes", .unit = Unit::bytes,
     .help = "most bytes in live blocks, after the policy's rounding",
     .get = [](const LogReplayRow& r) -> MetricValue { return replayed(r).peak_allocated; },
     .shown = [](const LogReplayRow& r) { return format_bytes_exact(replayed(r).peak_allocated); },
     .label = "peak allocated"},
    {.name = "fragmentation_at_peak", .unit = Unit::ratio,
     .help = "1 - allocated / reserved when allocated bytes peaked",
     .get = [](const LogReplayRow& r) -> MetricValue { return replayed(r).fragmentation_at_peak(); },
     .label = "fragmentation at peak"},
    {.name = "oom_count", .unit = Unit::count, .help = "requests the policy could not serve",
     .get = [](const LogReplayRow& r) -> MetricValue { return replayed(r).oom_count; }, .label = "OOMs"},
    {.name = "verdict", .unit = Unit::text, .help = "fits, or why not over the whole run",
     .get = [](const LogReplayRow& r) -> MetricValue {
       return std::string(verdict_word(verdict_of(r.outcome->run, replayed(r))));
     },
     .label = kRunVerdict.data()},
    {.name = "at_the_request", .unit = Unit::text,
     .help = "the OOMs counted by their kind at the request, the first OOM's first",
     .get = [](const LogReplayRow& r) -> MetricValue { return describe_request_kinds(replayed(r)); },
     .label = "OOMs at the request", .in_csv = false},
    {.name = "failures_reproduced", .unit = Unit::count, .help = "the log's failed requests that failed here too",
     .get = [](const LogReplayRow& r) { return log_count(r.outcome->failures_reproduced); },
     .shown = [](const LogReplayRow& r) {
       if (r.replay->failures == 0) return std::string("no failure logged");
       return std::to_string(r.outcome->failures_reproduced) + " of " + std::to_string(r.replay->failures);
     },
     .label = "log's failures failed too", .in_csv = false},
    {.name = "ooms_elsewhere", .unit = Unit::count, .help = "requests the log served and this replay did not",
     .get = [](const LogReplayRow& r) { return log_count(r.outcome->ooms_elsewhere); },
     .label = "OOMs where the log succeeded", .in_csv = false},
    {.name = "allocator_time_ns", .unit = Unit::nanos, .help = "simulated time spent in device calls",
     .get = [](const LogReplayRow& r) -> MetricValue { return replayed(r).allocator_time; }, .label = "allocator time"},
    {.name = "device_mallocs", .unit = Unit::count, .help = "successful device allocations (cudaMalloc)",
     .get = [](const LogReplayRow& r) -> MetricValue { return replayed(r).device_mallocs; }, .label = "device mallocs"},
}};

}  // namespace

std::span<const Column<LogReplayRow>> log_replay_columns() { return kLogColumns; }

std::vector<LogReplayRow> log_replay_rows(const LogReplay& replay) {
  std::vector<LogReplayRow> rows;
  for (const LogReplayOutcome& outcome : replay.outcomes) rows.push_back({&replay, &outcome});
  return rows;
}

std::vector<std::vector<std::string>> log_replay_table(const LogReplay& replay) {
  return column_table<LogReplayRow>(kLogColumns, log_replay_rows(replay));
}

std::vector<ReportedRun> log_replay_reported(const LogReplay& replay) {
  std::vector<ReportedRun> reported;
  for (const LogReplayOutcome& outcome : replay.outcomes) {
    if (!outcome.recorders) throw std::logic_error("a log replayed without the report's recorders");
    reported.push_back(ReportedRun{outcome.policy, outcome.scenario, outcome.run, *outcome.recorders,
                                   columns_json<LogReplayRow>(kLogColumns, LogReplayRow{&replay, &outcome})});
  }
  return reported;
}

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
