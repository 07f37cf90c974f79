#include "studies/run_exports.hpp"

#include <optional>
#include <vector>

#include "policies/registry.hpp"
#include "sim/atomic_file.hpp"
#include "studies/chrome_trace_export.hpp"
#include "studies/memory_viz_export.hpp"

namespace allocsim {

RunResult run_and_export(const Scenario& scenario, const ExportFiles& files, std::span<Observer* const> observers) {
  std::vector<Observer*> all(observers.begin(), observers.end());
  std::optional<MemoryVizExport> memory_viz;
  if (!files.memory_viz.empty()) all.push_back(&memory_viz.emplace(scenario));
  std::optional<ChromeTraceExport> chrome_trace;
  if (!files.chrome_trace.empty()) all.push_back(&chrome_trace.emplace(scenario));
  RunResult result = run(scenario, all);
  if (memory_viz) write_file_atomically(files.memory_viz, [&](std::ostream& out) { memory_viz->write(out); });
  if (chrome_trace) write_file_atomically(files.chrome_trace, [&](std::ostream& out) { chrome_trace->write(out); });
  return result;
}

}  // namespace allocsim
