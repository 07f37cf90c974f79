// The plain replay loop: a run with no checks and no observers hands its loop to the
// policy once (Policy::replay), and the loop compiled for a policy's own type gives what
// the virtual one gives, byte for byte, for every registered policy.
#include <algorithm>
#include <sstream>

#include <catch2/catch.hpp>

#include "policies/registry.hpp"
#include "sim/engine.hpp"
#include "sim/report.hpp"
#include "sim/tenant_replay.hpp"
#include "workloads/random_trace.hpp"

namespace allocsim {
namespace {

// bestfit, counting how often the engine hands it the plain loop, which it runs through
// the virtual calls.
class CountingPolicy final : public Policy {
 public:
  CountingPolicy(Device& device, int& replays) : inner_(make_policy("bestfit", device)), replays_(replays) {}
  Allocation allocate(const Request& request) override { return inner_->allocate(request); }
  void deallocate(const Block& block, Nanos now) override { inner_->deallocate(block, now); }
  PolicyStats stats() const override { return inner_->stats(); }
  void check() const override { inner_->check(); }
  void replay(const PlainReplay& replay) override {
    ++replays_;
    Policy::replay(replay);
  }

 private:
  std::unique_ptr<Policy> inner_;
  int& replays_;
};

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

TEST_CASE("a plain run hands its loop to the policy once; a checked or observed one keeps it", "[engine]") {
  Scenario scenario;
  const auto trace = random_trace(2'000);
  scenario.tenants.push_back(TenantSpec{trace, "counting"});
  int replays = 0;
  const PolicyFactory factory = [&](std::string_view, Device& device) {
    return std::make_unique<CountingPolicy>(device, replays);
  };
  const RunResult plain = run(scenario, factory);
  CHECK(replays == 1);
  CHECK(plain.events_replayed == trace->events.size());
  CHECK(plain.tenants[0].peak_allocated > 0);

  scenario.check = true;
  run(scenario, factory);
  scenario.check = false;
  SilentObserver observer;
  Observer* const observers[] = {&observer};
  run(scenario, factory, observers);
  CHECK(replays == 1);
}

TEST_CASE("every policy's own loop gives what the virtual loop gives, byte for byte", "[engine][conformance]") {
  const auto index = GENERATE(range(std::size_t{0}, all_policies().size()));
  const std::string policy(all_policies()[index].name);
  CAPTURE(policy);
  Scenario scenario;
  scenario.device.capacity = 64_MiB;  // tight: OOMs and the release-and-retry paths happen too
  scenario.on_oom = OnOom::continue_run;
  scenario.tenants.push_back(TenantSpec{random_trace(6'000), policy});
  const auto csv = [&](std::span<Observer* const> observers) {
    RunResult result = run(scenario, make_policy, observers);
    result.replay_seconds = 0;  // wall time is the one figure that may differ
    std::ostringstream out;
    write_csv(out, {&result, 1});
    return out.str();
  };
  SilentObserver observer;  // an observer makes the engine run the virtual loop itself
  Observer* const observers[] = {&observer};
  CHECK(csv({}) == csv(observers));
}

}  // namespace
}  // namespace allocsim
