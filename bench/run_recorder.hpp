// Google Benchmark's console output, plus each benchmark's seconds per iteration kept for
// a summary printed after it: the ratios a bench reports then come from the very runs
// printed above them (each the mean of its iterations; with --benchmark_repetitions, the
// fastest repetition), not from one extra pass of its own.
#pragma once

#include <benchmark/benchmark.h>

#include <map>
#include <string>
#include <vector>

namespace allocsim::bench {

class RunRecorder final : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& run : runs) {
      // The aggregates of --benchmark_repetitions (mean, stddev) are left out: the least
      // time of the repetitions is what a busy neighbour disturbed least.
      if (!run.error_occurred && run.iterations > 0 && run.run_type == Run::RT_Iteration) {
        const auto iterations = static_cast<double>(run.iterations);
        keep_least(seconds_, run.run_name.function_name, run.cpu_accumulated_time / iterations);
        keep_least(wall_seconds_, run.run_name.function_name, run.real_accumulated_time / iterations);
      }
    }
    ConsoleReporter::ReportRuns(runs);
  }
  // CPU (or wall) seconds per iteration of the benchmark registered as `name`; 0 if it did
  // not run (filtered out, or it failed).
  double seconds(const std::string& name) const { return find(seconds_, name); }
  double wall_seconds(const std::string& name) const { return find(wall_seconds_, name); }

 private:
  static void keep_least(std::map<std::string, double>& seconds, const std::string& name, double value) {
    const auto [at, added] = seconds.try_emplace(name, value);
    if (!added && value < at->second) at->second = value;
  }
  static double find(const std::map<std::string, double>& seconds, const std::string& name) {
    const auto found = seconds.find(name);
    return found == seconds.end() ? 0 : found->second;
  }
  std::map<std::string, double> seconds_;
  std::map<std::string, double> wall_seconds_;
};

}  // namespace allocsim::bench
