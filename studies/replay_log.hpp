// allocsim replay of a trace that is no PyTorch recording (an RMM log, our CSV): every
// policy replays it from an empty allocator on the same simulated device, as RMM's
// REPLAY_BENCHMARK replays a log (one event at a time, in the log's global order), and
// reports what that benchmark does not: peak reserved, fragmentation and OOMs per
// policy, and allocator time. Where the log says an allocation failed, the replay checks
// that it fails there too.
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "sim/csv_columns.hpp"
#include "sim/device.hpp"
#include "sim/made_policy.hpp"
#include "sim/result.hpp"
#include "sim/trace.hpp"
#include "studies/run_exports.hpp"
#include "workloads/reader.hpp"
#include "studies/run_report.hpp"

namespace allocsim {

struct LogReplayOutcome {
  std::string policy;
  RunResult run;  // one tenant
  Scenario scenario;                        // what was replayed, for a report
  std::shared_ptr<RunRecorders> recorders;  // what a report draws, when asked for (record)
  std::size_t failures_reproduced = 0;  // the log's failed requests that failed here too
  std::size_t ooms_elsewhere = 0;       // requests the log served and this replay did not
};

struct LogReplay {
  std::string reader;  // which catalogue reader read the file
  std::size_t events = 0;
  std::size_t failures = 0;  // failed requests in the log
  DeviceSpec device;
  std::vector<LogReplayOutcome> outcomes;  // one per policy, in the order given
};

// Contract: every policy replays `trace` on `device` with --on-oom continue (a log goes on
// past a failed request, so the replay does too); `failure_events` are the alloc events
// the log says failed (each is freed at once in the trace when it is served). `exports`: the export files of the replay, which take one policy (Error
// otherwise). With `record`, each outcome keeps the observers a report needs.
LogReplay replay_log(const Trace& trace, std::span<const std::size_t> failure_events,
                     std::span<const PolicyMaker> policies, const DeviceSpec& device, const ExportFiles& exports = {},
                     bool record = false);

// The file through the catalogue (an RMM log keeps its failure rows), then replay_log.
// `options` go to the file's reader (--cuda-device of a profiler trace or TensorFlow log).
LogReplay replay_log_file(const std::string& path, std::span<const PolicyMaker> policies, const DeviceSpec& device,
                          const LoadOptions& options = {}, const ExportFiles& exports = {},
                          bool record = false);

// A policy's replay of the log: a row of its column table.
struct LogReplayRow {
  const LogReplay* replay;
  const LogReplayOutcome* outcome;
};

// Every field the terminal shows of a replay, declared once: those in_csv under the name and
// with the value of the run metric in --csv (write_csv of the runs), the log's own beside them.
std::span<const Column<LogReplayRow>> log_replay_columns();
std::vector<LogReplayRow> log_replay_rows(const LogReplay& replay);
// The terminal's table: a row per column (its label, then a cell per policy).
std::vector<std::vector<std::string>> log_replay_table(const LogReplay& replay);
// The outcomes as a --report page's runs (studies/run_report), each named by its policy and
// carrying its row of the column table. Needs the recorders (replay_log's `record`).
std::vector<ReportedRun> log_replay_reported(const LogReplay& replay);

}  // namespace allocsim
