// The data of a run's HTML page (report_page draws it): for each tenant of each run, its
// fields under their column's name (the run metrics, sim/metrics.hpp, and a study's own row:
// docs/report.md), allocated, reserved and device bytes over simulated time, the address x
// time memory map of its blocks and segments, every OOM told at its moment (the verdict, the
// free blocks then, what held the rest) and the peak by tag and by layer. `run --report`
// gives one run of one or more tenants; `compare --report` one run per policy.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/block_log.hpp"
#include "sim/engine.hpp"
#include "sim/timeline.hpp"

namespace allocsim {

// The observers a report needs, attached to the run it reports.
struct RunRecorders {
  Timeline timeline{kReportTimelinePoints};
  BlockLog blocks;
  std::vector<Observer*> observers() { return {&timeline, &blocks}; }
  static constexpr std::size_t kReportTimelinePoints = 2000;  // per tenant: peaks survive the thinning
};

struct ReportedRun {
  std::string label;         // "" for a lone run; a compare names each run by its policy
  const Scenario& scenario;  // its traces give each block its tag and layer
  const RunResult& result;
  const RunRecorders& recorders;
  // The study's own row of this run's one tenant (a what-if side, a log's replay), as
  // columns_json gives it: its fields join the run metrics in the tenant's lane, its value
  // winning where both have a name (the value that study's CSV and table give). Null: the run
  // metrics alone.
  nlohmann::json row = nullptr;
};

// The memory map draws at most this many blocks per tenant: those with the largest
// bytes x lifetime, the page says how many it left out.
inline constexpr std::size_t kMapBlocks = 20'000;

// "resnet50_b64 with bfc" (each tenant, comma separated): what a page about `run` shows.
std::string run_title(const RunResult& run);

// The JSON document of the page; `title` and `command` head it.
std::string run_report_data(std::string_view title, std::string_view command, std::span<const ReportedRun> runs,
                            std::size_t map_blocks = kMapBlocks);

}  // namespace allocsim
