// The export outputs of a run (--memory-viz, --chrome-trace): the observers they need,
// attached to one engine run, and their files written whole once it is done.
#pragma once

#include <span>
#include <string>

#include "sim/engine.hpp"

namespace allocsim {

struct ExportFiles {
  std::string memory_viz;    // empty: not asked for
  std::string chrome_trace;  // empty: not asked for
  bool any() const { return !memory_viz.empty() || !chrome_trace.empty(); }
};

// run(scenario) with `observers` and the exporters `files` asks for; writes their files
// (atomically) when the run returns. Throws Error as the engine and the exporters do.
RunResult run_and_export(const Scenario& scenario, const ExportFiles& files, std::span<Observer* const> observers = {});

}  // namespace allocsim
