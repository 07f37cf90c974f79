// Streamed replay: the engine fed a window at a time (ids reused slots) gives every figure
// the in-memory replay gives, for every online policy, with OOMs and without.
#include <catch2/catch.hpp>

#include "policies/registry.hpp"
#include "same_results.hpp"
#include "sim/engine.hpp"
#include "sim/error.hpp"
#include "workloads/atrace.hpp"
#include "workloads/csv_trace.hpp"
#include "workloads/random_trace.hpp"

namespace allocsim {
namespace {

using test::check_same;
using test::scratch;

RandomTraceOptions small_random() {
  RandomTraceOptions options;
  options.events = 6000;
  options.seed = 5;
  options.max_bytes = 4_MiB;
  options.target_live = 96_MiB;
  options.streams = 2;
  options.sync_every = 250;
  return options;
}

Scenario scenario_of(TenantSpec tenant, Bytes capacity, OnOom on_oom) {
  Scenario scenario;
  scenario.device.capacity = capacity;
  scenario.on_oom = on_oom;
  scenario.check = true;
  scenario.tenants.push_back(std::move(tenant));
  return scenario;
}

TEST_CASE("a streamed replay (generator, .atrace, CSV) gives the in-memory replay's figures", "[engine][stream]") {
  const auto index = GENERATE(range(std::size_t{0}, all_policies().size()));
  const std::string policy(all_policies()[index].name);
  if (policy == "optimal") return;  // plans over the whole trace: refuses a stream (below)
  const auto [capacity, on_oom] = GENERATE(table<Bytes, OnOom>(
      {{16_GiB, OnOom::stop}, {160_MiB, OnOom::continue_run}, {160_MiB, OnOom::stop}}));
  INFO(policy << " on " << format_bytes(capacity));
  const RandomTraceOptions options = small_random();
  const auto trace = std::make_shared<const Trace>(make_random_trace(options, "random"));
  const auto file = scratch("random.atrace");
  write_atrace_file(*trace, file);
  const auto csv = scratch("random.csv");
  write_csv_trace_file(*trace, csv);

  const RunResult whole = run(scenario_of(TenantSpec{trace, policy_maker(policy), 0}, capacity, on_oom));
  const RunResult generated =
      run(scenario_of(TenantSpec::from_source(random_trace_stream(options, "random"), policy_maker(policy)), capacity, on_oom));
  const RunResult mapped = run(scenario_of(TenantSpec::from_source(atrace_stream(file), policy_maker(policy)), capacity, on_oom));
  const RunResult rows = run(scenario_of(TenantSpec::from_source(csv_trace_file_stream(csv), policy_maker(policy)), capacity, on_oom));
  check_same(whole.tenants[0], generated.tenants[0]);
  check_same(whole.tenants[0], mapped.tenants[0]);
  check_same(whole.tenants[0], rows.tenants[0]);
  CHECK(whole.peak_device == generated.peak_device);
}

TEST_CASE("the generator streams with state for the live allocations only", "[engine][stream]") {
  RandomTraceOptions options = small_random();
  options.events = 200000;
  const std::unique_ptr<EventSource> stream = random_trace_stream(options, "random")->open();
  std::uint64_t allocations = 0;
  for (EventWindow window = stream->next(); !window.events.empty(); window = stream->next()) {
    for (const Event& event : window.events) allocations += event.op == Op::alloc;
  }
  CHECK(allocations > 90000);
  CHECK(stream->slots() < 1000);  // ~96 MiB live of requests averaging ~0.4 MiB
  CHECK(stream->live_lower_bound() == make_random_trace(options, "random").live_lower_bound);
}

TEST_CASE("optimal refuses a streamed trace rather than plan without it", "[engine][stream]") {
  const Scenario scenario =
      scenario_of(TenantSpec::from_source(random_trace_stream(small_random(), "random"), policy_maker("optimal")), 16_GiB, OnOom::stop);
  CHECK_THROWS_WITH(run(scenario), Catch::Contains("whole trace") && Catch::Contains("--stream"));
}

}  // namespace
}  // namespace allocsim
