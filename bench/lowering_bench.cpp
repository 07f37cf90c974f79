// How long lowering a zoo model to one training step takes, and how many events the step
// has (target: resnet50_b64 in under 10 ms; a 7B decoder's step well under a second).
#include <benchmark/benchmark.h>

#include <string>

#include "workloads/catalogue.hpp"
#include "workloads/model/zoo.hpp"

namespace {

void lower_step(benchmark::State& state, const std::string& spec) {
  std::size_t events = 0;
  for (auto _ : state) {
    const allocsim::Trace trace = allocsim::load_workload(spec);
    events = trace.events.size();
    benchmark::DoNotOptimize(events);
  }
  state.counters["events_per_step"] = static_cast<double>(events);
}

const int registered = [] {
  benchmark::RegisterBenchmark("lower/resnet50_b64", lower_step, std::string("resnet50_b64"))
      ->Unit(benchmark::kMillisecond);
  for (const allocsim::ZooModel& model : allocsim::zoo()) {
    if (model.is_decoder() && *model.decoder->problem() != '\0') continue;  // `decoder`: its spec gives the sizes
    const std::string spec = std::string(model.name) + "_b32";
    benchmark::RegisterBenchmark(("lower/" + spec).c_str(), lower_step, spec)->Unit(benchmark::kMillisecond);
  }
  return 0;
}();

}  // namespace
