// The engine on small traces whose every figure was worked out by hand.
#include <algorithm>
#include <sstream>

#include <catch2/catch.hpp>

#include "policies/registry.hpp"
#include "sim/engine.hpp"
#include "sim/report.hpp"
#include "sim/timeline.hpp"
#include "workloads/random_trace.hpp"

namespace allocsim {
namespace {

std::shared_ptr<const Trace> share(TraceBuilder&& builder) {
  return std::make_shared<const Trace>(std::move(builder).finish());
}

Scenario one_tenant(Bytes capacity, std::shared_ptr<const Trace> trace, std::string policy) {
  Scenario scenario;
  scenario.device.capacity = capacity;
  scenario.device.cost = CostModel{0, 0, 0, 0, 1};  // free device calls: times stay as written
  scenario.check = true;
  scenario.tenants.push_back(TenantSpec{std::move(trace), policy_maker(std::move(policy)), 0});
  return scenario;
}

TEST_CASE("peaks, lower bound and fragmentation at the peak, by hand", "[engine]") {
  // bestfit over a 5 KiB region: a, b, c of 1 KiB fill [0, 3K); a is freed; d of 1.5 KiB
  // goes to the best fit [3K, 5K), leaving [0, 1K) and [4.5K, 5K) free.
  TraceBuilder builder({"hand", "test"});
  const AllocId a = builder.alloc(0, 1_KiB);
  builder.alloc(1, 1_KiB);
  builder.alloc(2, 1_KiB);
  builder.free(3, a);
  builder.alloc(4, 1536);
  const RunResult run = allocsim::run(one_tenant(16_KiB, share(std::move(builder)), "bestfit:region=5KiB"));
  const TenantResult& result = run.tenants[0];
  CHECK(result.peak_allocated == 3584);  // b + c + d
  CHECK(result.peak_requested == 3584);
  CHECK(result.live_lower_bound == 3584);
  CHECK(result.peak_reserved == 5_KiB);
  CHECK(result.fragmentation_at_peak() == Approx(1.0 - 3584.0 / 5120.0));          // 0.3
  CHECK(result.external_fragmentation_at_peak() == Approx(1.0 - 1024.0 / 1536.0));  // 1/3
  CHECK(result.overhead_vs_lower_bound() == Approx(5120.0 / 3584.0 - 1.0));
  CHECK(result.oom_count == 0);
  CHECK(result.device_mallocs == 1);
  CHECK(run.peak_device == 5_KiB);
}

TEST_CASE("the run says which step its peak and its first OOM are in", "[engine]") {
  // Step 1 holds 1 KiB at most; step 2 keeps 1 KiB (optimizer state, say) and asks for 2 KiB
  // more: 3 KiB on a 2 KiB device fails in step 2. With 4 KiB the peak (3 KiB) is in step 2.
  const auto two_steps = [] {
    TraceBuilder builder({"steps", "test"});
    builder.begin_step();
    builder.free(1, builder.alloc(0, 1_KiB));
    builder.alloc(2, 1_KiB);  // kept
    builder.begin_step();
    builder.free(4, builder.alloc(3, 2_KiB));
    return share(std::move(builder));
  };
  const RunResult fits = allocsim::run(one_tenant(4_KiB, two_steps(), "direct"));
  CHECK(fits.tenants[0].steps == 2);
  CHECK(fits.tenants[0].peak_step == 2);
  const RunResult fails = allocsim::run(one_tenant(2_KiB, two_steps(), "direct"));
  REQUIRE(fails.tenants[0].first_oom());
  CHECK(fails.tenants[0].first_oom()->event == 3);
  CHECK(fails.tenants[0].first_oom()->step == 2);
  std::ostringstream table;
  write_table(table, fails);
  CHECK_THAT(table.str(), Catch::Contains("OOM at event 3 of tenant 0 (step 2, t = "));
  std::ostringstream csv;
  write_csv(csv, {&fails, 1});
  const std::string text = csv.str();
  const std::string header = text.substr(0, text.find('\n'));
  CHECK_THAT(header, Catch::Contains(",end_time_ns,peak_runtime_bytes,peak_step,trace_steps,first_oom_step"));
  // The first step's peak (1 KiB, event 0 or 2) is the peak of the replayed prefix.
  CHECK(fails.tenants[0].peak_step == 1);
}

TEST_CASE("the seed article's OOM: free bytes in holes, no block large enough", "[engine]") {
  // 8 blocks of 1 KiB fill an 8 KiB device; every other one is freed: 4 KiB free in
  // 1 KiB holes, and a 3 KiB request fails.
  TraceBuilder builder({"seed", "test"});
  std::vector<AllocId> ids;
  for (int i = 0; i < 8; ++i) ids.push_back(builder.alloc(i, 1_KiB));
  for (int i = 1; i < 8; i += 2) builder.free(10 + i, ids[i]);
  builder.alloc(20, 3_KiB);
  const RunResult run = allocsim::run(one_tenant(8_KiB, share(std::move(builder)), "bestfit"));
  const TenantResult& result = run.tenants[0];
  REQUIRE(result.oom_count == 1);
  const OomRecord& oom = *result.first_oom();
  CHECK(oom.event == 12);
  CHECK(oom.bytes == 3_KiB);
  CHECK(oom.kind == OomKind::fragmentation);
  CHECK(oom.context.policy.largest_free == 1_KiB);
  CHECK(result.events_replayed == 13);  // stopped at the OOM, as the program would crash
  CHECK(describe_oom(oom) == "OOM at event 12 of tenant 0 (t = 20 ns): 3 KiB requested, fragmentation at the request: 4 KiB free "
                             "in the pool and 0 B more it may take from the device, but the largest free block is 1 KiB");
}

TEST_CASE("an OOM beyond the device is capacity; continue skips the request and its free", "[engine]") {
  TraceBuilder builder({"big", "test"});
  const AllocId big = builder.alloc(0, 2_MiB);
  builder.free(1, big);
  const AllocId small = builder.alloc(2, 512_KiB);
  builder.free(3, small);
  Scenario scenario = one_tenant(1_MiB, share(std::move(builder)), "direct");
  scenario.on_oom = OnOom::continue_run;
  const TenantResult result = allocsim::run(scenario).tenants[0];
  CHECK(result.oom_count == 1);
  CHECK(result.ooms_by_request_kind[static_cast<int>(OomKind::capacity)] == 1);
  CHECK(result.events_replayed == 4);
  CHECK(result.device_mallocs == 1);
  CHECK(result.device_failed_mallocs == 1);
  CHECK(result.peak_allocated == 512_KiB);
}

TEST_CASE("two tenants: memory another process preallocated is a reservation OOM", "[engine]") {
  // Tenant 0 (bestfit) takes the whole 16 KiB device at its first request; tenant 1
  // (direct) then needs 4 KiB: only 1 KiB is live anywhere, yet nothing is free.
  TraceBuilder greedy({"greedy", "test"});
  greedy.alloc(0, 1_KiB);
  TraceBuilder second({"second", "test"});
  second.alloc(5, 4_KiB);
  Scenario scenario;
  scenario.device.capacity = 16_KiB;
  scenario.check = true;
  scenario.tenants.push_back(TenantSpec{share(std::move(greedy)), policy_maker("bestfit"), 0});
  scenario.tenants.push_back(TenantSpec{share(std::move(second)), policy_maker("direct"), 0});
  const RunResult run = allocsim::run(scenario);
  CHECK(run.tenants[0].oom_count == 0);
  REQUIRE(run.tenants[1].oom_count == 1);
  CHECK(run.tenants[1].first_oom()->kind == OomKind::reservation);
  CHECK(run.tenants[1].first_oom()->tenant == 1);

  scenario.tenants[0].policy = policy_maker("direct");  // were tenant 0 to allocate on demand, both fit
  const RunResult shared = allocsim::run(scenario);
  CHECK(shared.tenants[1].oom_count == 0);
  CHECK(shared.peak_device == 5_KiB);
}

TEST_CASE("tenants merge in time order, ties going to the lower tenant", "[engine]") {
  TraceBuilder first({"first", "test"});
  first.alloc(100, 1_KiB);
  TraceBuilder second({"second", "test"});
  second.alloc(100, 1_KiB);
  Scenario scenario;
  scenario.device.capacity = 1_KiB;
  scenario.tenants.push_back(TenantSpec{share(std::move(first)), policy_maker("direct"), 0});
  scenario.tenants.push_back(TenantSpec{share(std::move(second)), policy_maker("direct"), 0});
  RunResult run = allocsim::run(scenario);
  CHECK(run.tenants[0].oom_count == 0);
  CHECK(run.tenants[1].oom_count == 1);
  CHECK(run.tenants[1].first_oom()->kind == OomKind::capacity);

  scenario.tenants[0].start = 1;  // now tenant 1 comes first
  run = allocsim::run(scenario);
  CHECK(run.tenants[0].oom_count == 1);
  CHECK(run.tenants[1].oom_count == 0);
}

TEST_CASE("device costs advance the simulated clock and count as allocator time", "[engine]") {
  TraceBuilder builder({"costs", "test"});
  const AllocId a = builder.alloc(1000, 1_KiB);
  builder.free(2000, a);
  Scenario scenario = one_tenant(1_MiB, share(std::move(builder)), "direct");
  scenario.device.cost = CostModel{.malloc_fixed_ns = 100, .malloc_ns_per_byte = 0.5,
                                   .free_fixed_ns = 50, .free_ns_per_byte = 0, .copy_bytes_per_ns = 1};
  const TenantResult result = allocsim::run(scenario).tenants[0];
  CHECK(result.allocator_time == 100 + 512 + 50);
  CHECK(result.end_time == 2000 + 612 + 50);  // the free happened 612 ns late, then took 50 ns
}

TEST_CASE("a timestamp whose sum with the allocator time would wrap the clock is refused", "[engine]") {
  // The free comes 612 ns late (the malloc's cost): at 2^64 - 100 ns it would wrap to 511.
  const Nanos last = ~Nanos{0} - 100;
  TraceBuilder builder({"late", "test"});
  const AllocId a = builder.alloc(1000, 1_KiB);
  builder.free(last, a);
  Scenario scenario = one_tenant(1_MiB, share(std::move(builder)), "direct");
  scenario.device.cost = CostModel{.malloc_fixed_ns = 100, .malloc_ns_per_byte = 0.5,
                                   .free_fixed_ns = 50, .free_ns_per_byte = 0, .copy_bytes_per_ns = 1};
  CHECK_THROWS_WITH(allocsim::run(scenario),
                    Catch::StartsWith("late: event 1 at time_ns " + std::to_string(last)) && Catch::Contains("612 ns") &&
                        Catch::Contains("2^64 ns"));
  // With room left, the same trace runs to its end.
  TraceBuilder fits({"fits", "test"});
  fits.free(last - 700, fits.alloc(1000, 1_KiB));
  scenario.tenants.front().trace = share(std::move(fits));
  CHECK(allocsim::run(scenario).tenants[0].end_time == last - 700 + 612 + 50);
}

TEST_CASE("the same scenario gives byte-identical results", "[engine]") {
  RandomTraceOptions options;
  options.events = 20'000;
  options.target_live = 48_MiB;
  Scenario scenario;
  scenario.device.capacity = 64_MiB;
  scenario.on_oom = OnOom::continue_run;
  const auto trace = std::make_shared<const Trace>(make_random_trace(options, "random"));
  scenario.tenants.push_back(TenantSpec{trace, policy_maker("bestfit"), 0});
  scenario.tenants.push_back(TenantSpec{trace, policy_maker("direct"), 500});
  const auto csv = [&] {
    RunResult result = allocsim::run(scenario);
    result.replay_seconds = 0;  // wall time is the one figure that may differ
    std::ostringstream out;
    write_csv(out, {&result, 1});
    return out.str();
  };
  CHECK(csv() == csv());
}

TEST_CASE("a timeline samples changes, stays within its bound and keeps the peak", "[engine]") {
  TraceBuilder builder({"saw", "test"});
  for (int i = 0; i < 100; ++i) builder.free(2 * i + 1, builder.alloc(2 * i, 1_KiB * (1 + i % 7)));
  const AllocId peak = builder.alloc(300, 100_KiB);  // the largest moment, late in the trace
  builder.free(301, peak);
  Timeline timeline(16);
  std::vector<Observer*> observers{&timeline};
  allocsim::run(one_tenant(1_MiB, share(std::move(builder)), "direct"), observers);
  const std::vector<Sample> points = timeline.points();
  CHECK(points.size() <= 16);
  CHECK(points.size() >= 8);
  for (std::size_t i = 1; i < points.size(); ++i) CHECK(points[i].time > points[i - 1].time);
  const auto largest = std::max_element(points.begin(), points.end(),
                                        [](const Sample& a, const Sample& b) { return a.allocated < b.allocated; });
  CHECK(largest->allocated == 100_KiB);
}

TEST_CASE("a timeline keeps a quiet tenant's points beside a busy one's", "[engine]") {
  Timeline timeline(4);
  for (Nanos t = 0; t < 1000; ++t) timeline.on_event(Sample{t, 0, t, t + 1, t + 1, 0});  // busy
  timeline.on_event(Sample{500, 1, 0, 7, 7, 0});                                         // quiet
  const std::vector<Sample> points = timeline.points();
  CHECK(std::count_if(points.begin(), points.end(), [](const Sample& p) { return p.tenant == 1; }) == 1);
}

}  // namespace
}  // namespace allocsim

namespace allocsim {
namespace {

TEST_CASE("the simulated device refuses sizes it cannot hold, however large", "[device]") {
  DeviceSpec spec;
  spec.capacity = 16_GiB;
  spec.granularity = 2_MiB;
  SimDevice device(spec);
  CHECK_FALSE(device.malloc(~Bytes{0} - 100));  // rounding to pages must not wrap to a small charge
  CHECK_FALSE(device.malloc(16_GiB + 1));
  CHECK(device.malloc(16_GiB));
  spec.granularity = 32_GiB;
  CHECK_THROWS_WITH(SimDevice(spec), Catch::Contains("granularity"));
}

}  // namespace
}  // namespace allocsim

namespace allocsim {
namespace {

TEST_CASE("the breakdown at the peak leaves out requests an OOM dropped", "[engine]") {
  TraceBuilder builder({"skip", "test"});
  const AllocId big = builder.alloc(0, 2_MiB, 0, Tag::activation);  // fails on a 1 MiB device
  const AllocId small = builder.alloc(1, 512_KiB, 0, Tag::weight);
  builder.free(2, small);
  builder.free(3, big);
  Scenario scenario;
  scenario.device.capacity = 1_MiB;
  scenario.on_oom = OnOom::continue_run;
  scenario.tenants.push_back(TenantSpec{std::make_shared<const Trace>(std::move(builder).finish()), policy_maker("direct"), 0});
  const TenantResult result = allocsim::run(scenario).tenants[0];
  CHECK(result.peak_event == 1);
  CHECK(result.at_peak.by_tag[static_cast<int>(Tag::weight)] == 512_KiB);
  CHECK(result.at_peak.by_tag[static_cast<int>(Tag::activation)] == 0);
}

}  // namespace
}  // namespace allocsim
