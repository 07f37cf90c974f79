// The plain replay loop: a run with no checks and no observers runs the direct loop its
// factory gave, once, and the loop compiled for a policy's own type gives what the virtual
// one gives, byte for byte, for every registered policy.
#include <algorithm>
#include <sstream>

#include <catch2/catch.hpp>

#include "policies/registry.hpp"
#include "sim/direct_loop.hpp"
#include "sim/engine.hpp"
#include "sim/report.hpp"
#include "sim/sim_device.hpp"
#include "workloads/random_trace.hpp"

namespace allocsim {
namespace {

// bestfit's direct loop, counting how often the engine runs it.
DirectLoop bestfit_loop = nullptr;
int replays = 0;
void counting_loop(Policy& policy, const PlainReplay& replay) {
  ++replays;
  bestfit_loop(policy, replay);
}

class SilentObserver final : public Observer {
 public:
  void on_event(const Sample&) override {}
};

std::shared_ptr<const Trace> random_trace(std::uint64_t events) {
  RandomTraceOptions options;
  options.events = events;
  options.target_live = 48_MiB;
  options.streams = 2;
  options.sync_every = 97;
  return std::make_shared<const Trace>(make_random_trace(options, "random"));
}

TEST_CASE("a plain run takes its policy's direct loop once; a checked or observed one keeps its own", "[engine]") {
  Scenario scenario;
  const auto trace = random_trace(2'000);
  const PolicySpec bestfit = parse_policy_spec("bestfit");
  scenario.tenants.push_back(TenantSpec{trace, PolicyMaker{bestfit.text, [&bestfit](Device& device) {
                                          MadePolicy made = bestfit.make(device);
                                          bestfit_loop = made.loop;
                                          made.loop = &counting_loop;
                                          return made;
                                        }}});
  replays = 0;
  const RunResult plain = run(scenario);
  CHECK(replays == 1);
  CHECK(plain.events_replayed == trace->events.size());
  CHECK(plain.tenants[0].peak_allocated > 0);

  scenario.check = true;
  run(scenario);
  scenario.check = false;
  SilentObserver observer;
  Observer* const observers[] = {&observer};
  run(scenario, observers);
  CHECK(replays == 1);
}

TEST_CASE("every policy's own loop gives what the virtual loop gives, byte for byte", "[engine][conformance]") {
  const auto index = GENERATE(range(std::size_t{0}, all_policies().size()));
  const std::string policy(all_policies()[index].name);
  CAPTURE(policy);
  Scenario scenario;
  scenario.device.capacity = 64_MiB;  // tight: OOMs and the release-and-retry paths happen too
  scenario.on_oom = OnOom::continue_run;
  scenario.tenants.push_back(TenantSpec{random_trace(6'000), policy_maker(policy)});
  const auto csv = [&](std::span<Observer* const> observers) {
    RunResult result = run(scenario, observers);
    result.replay_seconds = 0;  // wall time is the one figure that may differ
    std::ostringstream out;
    write_csv(out, {&result, 1});
    return out.str();
  };
  SimDevice device(scenario.device);
  CHECK(parse_policy_spec(policy).make(device).loop != nullptr);  // every row gives its direct loop
  SilentObserver observer;  // an observer makes the engine run the virtual loop itself
  Observer* const observers[] = {&observer};
  CHECK(csv({}) == csv(observers));
}

}  // namespace
}  // namespace allocsim
