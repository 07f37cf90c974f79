#include "studies/replay_log.hpp"

#include <algorithm>
#include <array>
#include <memory>
#include <stdexcept>

#include "sim/engine.hpp"
#include "sim/metrics.hpp"
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

// A run metric (sim/metrics.cpp) as a column of the log's table: its name, unit, help and
// value are the metric's, declared there once; `get` reads it by the same name.
Column<LogReplayRow> metric_column(std::string_view name, MetricValue (*get)(const LogReplayRow&), const char* label,
                                   std::string (*shown)(const LogReplayRow&) = nullptr) {
  const Metric& metric = find_metric(name);
  return {.name = metric.name, .unit = metric.unit, .help = metric.help, .get = get, .shown = shown, .label = label};
}
MetricValue run_metric(const LogReplayRow& r, std::string_view name) {
  return find_metric(name).get(r.outcome->run, replayed(r));
}

}  // namespace

// The run metrics where the CSV has the field (in_csv); the log's own three after the
// verdict. The terminal's table shows every one, a row each, in this order. Made at the
// first call, after the metric table it reads.
std::span<const Column<LogReplayRow>> log_replay_columns() {
  static const std::array<Column<LogReplayRow>, 11> columns{{
      metric_column("policy", [](const LogReplayRow& r) { return run_metric(r, "policy"); }, nullptr),
      metric_column(
          "peak_reserved_bytes", [](const LogReplayRow& r) { return run_metric(r, "peak_reserved_bytes"); },
          "peak reserved", [](const LogReplayRow& r) { return format_bytes_exact(replayed(r).peak_reserved); }),
      metric_column(
          "peak_allocated_bytes", [](const LogReplayRow& r) { return run_metric(r, "peak_allocated_bytes"); },
          "peak allocated", [](const LogReplayRow& r) { return format_bytes_exact(replayed(r).peak_allocated); }),
      metric_column(
          "fragmentation_at_peak", [](const LogReplayRow& r) { return run_metric(r, "fragmentation_at_peak"); },
          "fragmentation at peak"),
      metric_column("oom_count", [](const LogReplayRow& r) { return run_metric(r, "oom_count"); }, "OOMs"),
      metric_column("verdict", [](const LogReplayRow& r) { return run_metric(r, "verdict"); }, kRunVerdict.data()),
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
      metric_column("allocator_time_ns", [](const LogReplayRow& r) { return run_metric(r, "allocator_time_ns"); },
                    "allocator time"),
      metric_column("device_mallocs", [](const LogReplayRow& r) { return run_metric(r, "device_mallocs"); },
                    "device mallocs"),
  }};
  return columns;
}

std::vector<LogReplayRow> log_replay_rows(const LogReplay& replay) {
  std::vector<LogReplayRow> rows;
  for (const LogReplayOutcome& outcome : replay.outcomes) rows.push_back({&replay, &outcome});
  return rows;
}

std::vector<std::vector<std::string>> log_replay_table(const LogReplay& replay) {
  return column_table<LogReplayRow>(log_replay_columns(), log_replay_rows(replay));
}

std::vector<ReportedRun> log_replay_reported(const LogReplay& replay) {
  std::vector<ReportedRun> reported;
  for (const LogReplayOutcome& outcome : replay.outcomes) {
    if (!outcome.recorders) throw std::logic_error("a log replayed without the report's recorders");
    reported.push_back(ReportedRun{outcome.policy, outcome.scenario, outcome.run, *outcome.recorders,
                                   columns_json<LogReplayRow>(log_replay_columns(), LogReplayRow{&replay, &outcome})});
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
