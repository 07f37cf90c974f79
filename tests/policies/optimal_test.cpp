// optimal on paper: traces whose best arena is known, and the planner's invariants on
// random traces (no two live allocations overlap, never below the live lower bound).
#include <catch2/catch.hpp>

#include "policies/common/offline_plan.hpp"
#include "policies/registry.hpp"
#include "sim/engine.hpp"
#include "workloads/catalogue.hpp"
#include "workloads/random_trace.hpp"

namespace allocsim::test {
namespace {

TenantResult replay(const Trace& trace, const std::string& policy) {
  Scenario scenario;
  scenario.device.capacity = 4_GiB;
  scenario.check = true;
  scenario.tenants.push_back(TenantSpec{std::make_shared<const Trace>(trace), policy_maker(policy), 0});
  return run(scenario).tenants[0];
}

// a 256, b 512, a freed, c 512: online best fit cannot put c in a's 256 hole and ends at
// 1280 bytes; the live peak is b + c = 1024, which a planner reaches.
Trace online_trap() {
  TraceBuilder builder(TraceInfo{"trap", "test"});
  const AllocId a = builder.alloc(0, 256);
  const AllocId b = builder.alloc(1, 512);
  builder.free(2, a);
  const AllocId c = builder.alloc(3, 512);
  builder.free(4, b);
  builder.free(5, c);
  return std::move(builder).finish();
}

TEST_CASE("optimal reaches the live lower bound where online best fit cannot", "[optimal]") {
  const Trace trace = online_trap();
  REQUIRE(trace.live_lower_bound == 1024);
  const OfflinePlan plan = plan_offline(trace);
  CHECK(plan.arena == 1024);
  CHECK(plan.heuristic != "online-best-fit");
  CHECK_FALSE(find_plan_conflict(trace, plan));
  CHECK(replay(trace, "bestfit:region=4KiB").peak_allocated == 1024);
  const TenantResult result = replay(trace, "optimal");
  CHECK(result.peak_reserved == 1024);
  CHECK(result.overhead_vs_lower_bound() == 0.0);
}

TEST_CASE("optimal stacks allocations that all live at once, and rounds to 256 B", "[optimal]") {
  TraceBuilder builder(TraceInfo{"stack", "test"});
  builder.alloc(0, 100);   // 256
  builder.alloc(1, 1000);  // 1024
  builder.alloc(2, 0);     // an empty block costs nothing
  builder.alloc(3, 256);
  const Trace trace = std::move(builder).finish();
  const OfflinePlan plan = plan_offline(trace);
  CHECK(plan.arena == 256 + 1024 + 256);
  CHECK(plan.aligned_lower_bound == plan.arena);
  CHECK(trace.live_lower_bound == 1356);
  CHECK_FALSE(find_plan_conflict(trace, plan));
  CHECK(replay(trace, "optimal").peak_reserved == 1536);
}

TEST_CASE("find_plan_conflict catches two live allocations at one offset", "[optimal]") {
  const Trace trace = online_trap();
  OfflinePlan plan = plan_offline(trace);
  plan.offset[2] = plan.offset[1];  // c on top of b while both live
  CHECK(find_plan_conflict(trace, plan));
}

TEST_CASE("optimal never goes below the lower bound and never overlaps, on random traces", "[optimal]") {
  for (std::uint64_t seed : {1, 2, 3, 4, 5}) {
    CAPTURE(seed);
    RandomTraceOptions options;
    options.events = 4'000;
    options.seed = seed;
    options.max_bytes = 1_MiB;
    options.target_live = 16_MiB;
    options.order = seed % 2 ? FreeOrder::random : FreeOrder::lifo;
    const Trace trace = make_random_trace(options, "random");
    const OfflinePlan plan = plan_offline(trace);
    CHECK_FALSE(find_plan_conflict(trace, plan));
    CHECK(plan.arena >= plan.aligned_lower_bound);
    CHECK(plan.aligned_lower_bound >= trace.live_lower_bound);
    OfflinePlanOptions online_only;
    online_only.max_pairs = 0;
    const OfflinePlan online = plan_offline(trace, online_only);
    CHECK(online.heuristic.starts_with("online-"));
    CHECK_FALSE(find_plan_conflict(trace, online));
    CHECK(plan.arena <= online.arena);  // the greedy ones only ever improve on it
    const TenantResult result = replay(trace, "optimal");
    CHECK(result.peak_reserved == plan.arena);
    CHECK(result.oom_count == 0);
  }
}

// The greedy heuristics find the placed neighbours of an allocation from its conflict row or
// by scanning the placed ones in offset order; the plans must be the same, offset for offset.
TEST_CASE("optimal plans the same whichever way the greedy heuristics find neighbours", "[optimal]") {
  std::vector<Trace> traces;
  for (std::uint64_t seed : {1, 2, 3}) {
    RandomTraceOptions options;
    options.events = 3'000;
    options.seed = seed;
    options.max_bytes = 1_MiB;
    options.target_live = seed * 8_MiB;  // sparse to dense: the cheaper way differs
    options.order = seed % 2 ? FreeOrder::random : FreeOrder::fifo;
    traces.push_back(make_random_trace(options, "random"));
  }
  for (const char* model : {"resnet18_b3", "resnet18_b12_amp", "seed_cnn_b6_adam"}) traces.push_back(load_workload(model));
  bool greedy_won = false;
  for (const Trace& trace : traces) {
    CAPTURE(trace.info.name);
    OfflinePlanOptions options;
    options.gap_search = GapSearch::neighbours;
    const OfflinePlan reference = plan_offline(trace, options);
    greedy_won = greedy_won || reference.heuristic.starts_with("greedy");
    for (const GapSearch search : {GapSearch::by_offset, GapSearch::cheaper}) {
      options.gap_search = search;
      const OfflinePlan plan = plan_offline(trace, options);
      CHECK(plan.heuristic == reference.heuristic);
      CHECK(plan.arena == reference.arena);
      CHECK(plan.offset == reference.offset);
    }
  }
  CHECK(greedy_won);  // the comparison reached the greedy placements
}

// Plans are remembered by the trace's sizes and lifetimes: a trace with the same lifetimes and
// one size changed is planned afresh, not handed the plan of the first.
TEST_CASE("optimal hands a remembered plan only to the same trace", "[optimal]") {
  const auto trap = [](Bytes c_bytes) {
    TraceBuilder builder(TraceInfo{"trap", "test"});
    const AllocId a = builder.alloc(0, 256);
    const AllocId b = builder.alloc(1, 512);
    builder.free(2, a);
    const AllocId c = builder.alloc(3, c_bytes);
    builder.free(4, b);
    builder.free(5, c);
    return std::move(builder).finish();
  };
  const OfflinePlan first = plan_offline(trap(512));
  CHECK(plan_offline(trap(512)).offset == first.offset);
  const Trace smaller = trap(256);
  const OfflinePlan second = plan_offline(smaller);
  CHECK(second.offset != first.offset);  // not the first's plan, whose c lies above b
  CHECK(second.arena == 768);  // c fits a's hole: b + c
  CHECK_FALSE(find_plan_conflict(smaller, second));
  OfflinePlanOptions aligned;
  aligned.alignment = 1024;
  CHECK(plan_offline(trap(512), aligned).arena == 2048);  // options are part of what it depends on
}

}  // namespace
}  // namespace allocsim::test
