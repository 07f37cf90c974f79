// Verdicts over the whole run, the holder of what a tenant could not have, one CUDA
// context per tenant and tenants that start late: figures worked out on paper.
#include <sstream>

#include <catch2/catch.hpp>

#include "policies/registry.hpp"
#include "sim/device_presets.hpp"
#include "sim/engine.hpp"
#include "sim/metrics.hpp"
#include "sim/report.hpp"
#include "sim/verdict.hpp"
#include "studies/scenario_choice.hpp"
#include "workloads/catalogue.hpp"

namespace allocsim {
namespace {

std::shared_ptr<const Trace> one_block(Bytes bytes, Nanos at = 0, Nanos hold = 1000) {
  TraceBuilder builder({"one_block", "test"});
  const AllocId id = builder.alloc(at, bytes);
  builder.free(at + hold, id);
  return std::make_shared<const Trace>(std::move(builder).finish());
}

DeviceSpec card(Bytes capacity, Bytes context) {
  DeviceSpec device;
  device.capacity = capacity;
  device.context_overhead = context;
  device.cost = CostModel{0, 0, 0, 0, 1};  // free device calls: times stay as written
  return device;
}

const Metric& metric(std::string_view name) {
  for (const Metric& m : metrics()) {
    if (m.name == name) return m;
  }
  FAIL("no metric " << name);
  return metrics().front();
}

TEST_CASE("resnet50_b200 on v100-16gb is capacity over the whole run, whatever request failed first", "[verdict]") {
  // The trace needs 16.3 GiB live; the card has 15.78 GiB less a 500 MiB context. bfc
  // fails first on a request its reserve-shrunk pool cannot hold (reservation at that
  // request), but no allocator fits the run.
  Scenario scenario;
  scenario.device = device_spec("v100-16gb");
  scenario.tenants.push_back(TenantSpec{std::make_shared<const Trace>(load_workload("resnet50_b200")), policy_maker("bfc"), 0});
  const RunResult run = allocsim::run(scenario);
  const TenantResult& tenant = run.tenants[0];
  REQUIRE(tenant.first_oom());
  CHECK(tenant.first_oom()->kind == OomKind::capacity);
  CHECK(tenant.first_oom()->request_kind != OomKind::capacity);
  CHECK(tenant.needs >= tenant.live_lower_bound);
  const Bytes usable = scenario.device.capacity - scenario.device.context_overhead;
  CHECK(tenant.needs > usable);

  const Verdict verdict = verdict_of(run, tenant);
  CHECK_FALSE(verdict.fits);
  CHECK(verdict_word(verdict) == "capacity");
  CHECK(verdict.could_give == usable);
  const std::string text = describe_verdict(verdict, "v100-16gb");
  CHECK_THAT(text, Catch::StartsWith("tenant 0 does not fit (capacity): needs at least " + format_bytes(tenant.needs) +
                                     " live; the device v100-16gb gives this process 15.3 GiB"));
  CHECK_THAT(text, Catch::Contains("no allocator fits this"));
  CHECK(format_plain(metric("first_oom_kind").get(run, tenant)) == "capacity");
  CHECK(format_plain(metric("verdict").get(run, tenant)) == "capacity");
}

TEST_CASE("two tenants on a 500 MiB-context device are charged two contexts", "[verdict][tenants]") {
  // 4 GiB card: 2 x 500 MiB of contexts and two blocks of 1 GiB, both alive at t = 500.
  Scenario scenario;
  scenario.device = card(4_GiB, 500_MiB);
  scenario.check = true;
  scenario.tenants.push_back(TenantSpec{one_block(1_GiB, 0), policy_maker("direct"), 0});
  scenario.tenants.push_back(TenantSpec{one_block(1_GiB, 500), policy_maker("direct"), 0});
  const RunResult run = allocsim::run(scenario);
  CHECK(run.peak_device == 2 * 500_MiB + 2_GiB);
  CHECK(run.tenants[0].context == 500_MiB);
  CHECK(run.tenants[1].context == 500_MiB);

  SECTION("what the device gives the second is less both contexts and the first's block") {
    // 2.5 GiB asked while tenant 0 holds 1 GiB: 4 GiB - 1000 MiB - 1 GiB = 2072 MiB.
    scenario.tenants[1].trace = one_block(2560_MiB, 500);
    const RunResult failed = allocsim::run(scenario);
    const Verdict verdict = verdict_of(failed, failed.tenants[1]);
    CHECK(verdict.gives == 4_GiB - 1000_MiB - 1_GiB);
    CHECK(verdict.could_give == 4_GiB - 1000_MiB - 1_GiB);  // the 1 GiB is live, not a cache
    CHECK(verdict_word(verdict) == "capacity");
  }
}

TEST_CASE("a tenant's context is given back when it crashes", "[verdict][tenants]") {
  // Tenant 0 asks more than the card and crashes at t = 0 (--on-oom stop); tenant 1 starts
  // at 2000 and can have all but its own context.
  Scenario scenario;
  scenario.device = card(2_GiB, 512_MiB);
  scenario.check = true;
  scenario.tenants.push_back(TenantSpec{one_block(4_GiB, 0), policy_maker("direct"), 0});
  scenario.tenants.push_back(TenantSpec{one_block(1536_MiB, 0), policy_maker("direct"), 2000});
  const RunResult run = allocsim::run(scenario);
  CHECK(run.tenants[0].oom_count == 1);
  CHECK(run.tenants[1].oom_count == 0);
  CHECK(run.peak_device == 2_GiB);
}

TEST_CASE("a process whose CUDA context does not fit fails at its start", "[verdict][tenants]") {
  // 1 GiB card, 600 MiB contexts: the second process cannot even create its context.
  Scenario scenario;
  scenario.device = card(1_GiB, 600_MiB);
  scenario.check = true;
  scenario.tenants.push_back(TenantSpec{one_block(1_MiB, 0, 10'000), policy_maker("direct"), 0});
  scenario.tenants.push_back(TenantSpec{one_block(1_MiB, 0), policy_maker("direct"), 100});
  const RunResult run = allocsim::run(scenario);
  const TenantResult& second = run.tenants[1];
  REQUIRE(second.first_oom());
  CHECK(second.first_oom()->at_start);
  CHECK(second.first_oom()->bytes == 600_MiB);
  CHECK(second.events_replayed == 0);
  CHECK(second.context == 0);
  const Verdict verdict = verdict_of(run, second);
  CHECK(verdict.context_failed);
  CHECK_THAT(describe_verdict(verdict, "sim"), Catch::Contains("could not create its CUDA context (600 MiB)"));
  CHECK_THAT(describe_oom(*second.first_oom()), Catch::Contains("600 MiB requested for its CUDA context"));
}

TEST_CASE("bfc takes what is free when its process starts: start order decides who fits", "[verdict][tenants]") {
  // A 16 GiB card. Tenant 0, TensorFlow's default, needs 3 GiB; tenant 1 (direct) needs 2.5 GiB.
  Scenario scenario;
  scenario.device = card(16_GiB, 0);
  scenario.check = true;
  scenario.tenants.push_back(TenantSpec{one_block(3_GiB, 0, 10'000), policy_maker("bfc"), 0});
  scenario.tenants.push_back(TenantSpec{one_block(2560_MiB, 0, 10'000), policy_maker("direct"), 0});

  SECTION("bfc first: its pool is 16 GiB less 1800 MiB; the other tenant gets 1800 MiB and fails") {
    const RunResult run = allocsim::run(scenario);
    REQUIRE(run.tenants[1].first_oom());
    const Verdict verdict = verdict_of(run, run.tenants[1]);
    CHECK(verdict_word(verdict) == "reservation");
    CHECK(verdict.gives == 1800_MiB);
    REQUIRE_FALSE(verdict.holders.empty());
    CHECK(verdict.holders.front().kind == HolderKind::other_tenant);
    CHECK(verdict.holders.front().tenant == 0);
    CHECK(verdict.holders.front().bytes == 16_GiB - 1800_MiB);
    CHECK_THAT(describe_verdict(verdict, "sim"), Catch::Contains("held: tenant 0 14.2 GiB"));
  }
  SECTION("bfc started 1 us later: its pool is what the other left, less the reserve; both fit") {
    scenario.tenants[0].start = 1000;
    const RunResult run = allocsim::run(scenario);
    CHECK(run.tenants[0].oom_count == 0);
    CHECK(run.tenants[1].oom_count == 0);
    CHECK(run.tenants[0].peak_reserved == 16_GiB - 2560_MiB - 1800_MiB);
  }
}

TEST_CASE("a reservation names the policy's own limit and its own cache", "[verdict]") {
  SECTION("memory_limit below the need") {
    Scenario scenario;
    scenario.device = card(8_GiB, 0);
    scenario.tenants.push_back(TenantSpec{one_block(5_GiB), policy_maker("bfc:limit=4GiB"), 0});
    const RunResult run = allocsim::run(scenario);
    const Verdict verdict = verdict_of(run, run.tenants[0]);
    CHECK(verdict_word(verdict) == "reservation");
    REQUIRE(verdict.holders.size() == 1);
    CHECK(verdict.holders[0].kind == HolderKind::memory_limit);
    CHECK(verdict.holders[0].bytes == 4_GiB);
    CHECK(format_plain(metric("held_by").get(run, run.tenants[0])) == "memory_limit=4294967296");
  }
  SECTION("TensorFlow's reserve below the need on its own") {
    // 8 GiB, sm_90: the pool is 8 GiB - 1800 MiB; 7 GiB fits the device, not the pool.
    Scenario scenario;
    scenario.device = card(8_GiB, 0);
    scenario.tenants.push_back(TenantSpec{one_block(7_GiB), policy_maker("bfc"), 0});
    const RunResult run = allocsim::run(scenario);
    const Verdict verdict = verdict_of(run, run.tenants[0]);
    CHECK(verdict_word(verdict) == "reservation");
    REQUIRE(verdict.holders.size() == 1);
    CHECK(verdict.holders[0].kind == HolderKind::system_reserve);
    CHECK(verdict.holders[0].bytes == 1800_MiB);
  }
}

TEST_CASE("the lower bound of a verdict counts the policy's rounding", "[verdict]") {
  // 1000 requests of 1 B alive at once: 1000 B requested, but bfc gives each 256 B.
  TraceBuilder builder({"tiny", "test"});
  for (int i = 0; i < 1000; ++i) builder.alloc(static_cast<Nanos>(i), 1);
  Scenario scenario;
  scenario.device = card(200'000, 0);  // 256000 B needed
  scenario.tenants.push_back(TenantSpec{std::make_shared<const Trace>(std::move(builder).finish()), policy_maker("bestfit"), 0});
  const RunResult run = allocsim::run(scenario);
  const TenantResult& tenant = run.tenants[0];
  CHECK(tenant.live_lower_bound == 1000);
  CHECK(tenant.needs == 256'000);
  CHECK(tenant.first_oom()->kind == OomKind::capacity);
}

TEST_CASE("overhead_vs_lower_bound is empty whenever a request failed, under either --on-oom", "[verdict]") {
  TraceBuilder builder({"two", "test"});
  const AllocId big = builder.alloc(0, 3_GiB);
  builder.free(1, big);
  builder.alloc(2, 1_GiB);
  Scenario scenario;
  scenario.device = card(2_GiB, 0);
  scenario.on_oom = OnOom::continue_run;
  scenario.tenants.push_back(TenantSpec{std::make_shared<const Trace>(std::move(builder).finish()), policy_maker("direct"), 0});
  const RunResult run = allocsim::run(scenario);
  REQUIRE(run.tenants[0].oom_count == 1);
  REQUIRE(run.tenants[0].events_replayed == run.tenants[0].events);
  CHECK(format_plain(metric("overhead_vs_lower_bound").get(run, run.tenants[0])).empty());
}

TEST_CASE("bfc's preallocated pool is reserved, unused, and no fragmentation of touched memory", "[verdict][bfc]") {
  // A 10 GiB card, sm_90: bfc takes 10 GiB - 1800 MiB at once. 1 GiB and 256 B + 1 live at the peak.
  TraceBuilder builder({"prealloc", "test"});
  builder.alloc(0, 1_GiB);
  builder.alloc(1, 257);
  Scenario scenario;
  scenario.device = card(10_GiB, 0);
  scenario.tenants.push_back(TenantSpec{std::make_shared<const Trace>(std::move(builder).finish()), policy_maker("bfc"), 0});
  const RunResult run = allocsim::run(scenario);
  const TenantResult& tenant = run.tenants[0];
  const Bytes pool = 10_GiB - 1800_MiB;
  CHECK(tenant.reserved_at_peak == pool);
  CHECK(tenant.rounding_waste_at_peak() == 512 - 257);
  CHECK(tenant.reserved_unused_at_peak() == pool - 1_GiB - 512);
  CHECK(tenant.never_touched_at_peak == pool - 1_GiB - 512);
  CHECK(tenant.cached_free_at_peak() == 0);
  CHECK(tenant.fragmentation_of_touched_at_peak() == Approx(0.0));
  CHECK(tenant.fragmentation_at_peak() > 0.8);  // the old figure, kept: over all that is reserved
  std::ostringstream table;
  write_table(table, run);
  CHECK_THAT(table.str(), Catch::StartsWith("tenant 0 fits: peak 1.00 GiB allocated, 8.24 GiB reserved"));
  CHECK_THAT(table.str(), Catch::Contains("7.24 GiB reserved, unused: 7.24 GiB never touched, 0 B cached free"));
}

TEST_CASE("a tenant spec takes a start time: WORKLOAD@POLICY@start=TIME", "[verdict][cli]") {
  const TenantChoice plain = parse_tenant("resnet50_b8@bfc");
  CHECK(plain.workload.text == "resnet50_b8");
  CHECK(plain.policy.text == "bfc");
  CHECK(plain.start == 0);
  const TenantChoice late = parse_tenant("dir@x/trace.csv@caching:fraction=0.5@start=2.5ms");
  CHECK(late.workload.text == "dir@x/trace.csv");
  CHECK(late.policy.text == "caching:fraction=0.5");
  CHECK(late.start == 2'500'000);
  CHECK(parse_tenant("random@bfc@start=3s").start == 3'000'000'000);
  CHECK(parse_tenant("random@bfc@start=40").start == 40);
  CHECK_THROWS_WITH(parse_tenant("a@b@start=-1s"), Catch::Contains("negative"));
  CHECK_THROWS_WITH(parse_tenant("a@b@start=soon"), Catch::Contains("'a@b@start=soon'"));
  CHECK_THROWS_WITH(parse_tenant("a@b@start=1h"), Catch::Contains("unknown unit"));
  CHECK_THROWS_WITH(parse_tenant("a@start=1s"), Catch::Contains("is not WORKLOAD@POLICY"));
}

// A context worked on paper: a 16 MiB device with no context; the policy's limit 8 MiB, all of
// it reserved, 4 MiB live in 1 MiB holes; a 3 MiB request.
OomContext holes_under_a_limit(Bytes needs) {
  OomContext context{};
  context.request = 3_MiB;
  context.live_requested = 4_MiB;
  context.own_live_requested = 4_MiB;
  context.usable = 16_MiB;
  context.device_available = 8_MiB;
  context.policy.allocated = 4_MiB;
  context.policy.reserved = 8_MiB;
  context.policy.largest_free = 1_MiB;
  context.policy.limit = 8_MiB;
  context.policy.limit_kind = LimitKind::memory_limit;
  context.needs = needs;
  context.share = TenantShare{16_MiB, 0, 0, {}};
  return context;
}

TEST_CASE("the run verdict is fragmentation only when what the run needs fits the policy's limit", "[verdict][oom]") {
  // At the request: 4 + 3 MiB fit the limit, no headroom under it, 4 MiB free in the pool but
  // in 1 MiB holes: fragmentation. Over the run, the verdict turns on needs against 8 MiB.
  CHECK(classify_oom(holes_under_a_limit(7_MiB)) == OomKind::fragmentation);
  CHECK(classify_over_run(holes_under_a_limit(7_MiB)) == OomKind::fragmentation);
  CHECK(classify_over_run(holes_under_a_limit(8_MiB)) == OomKind::fragmentation);
  CHECK(classify_oom(holes_under_a_limit(8_MiB + 1)) == OomKind::fragmentation);
  CHECK(classify_over_run(holes_under_a_limit(8_MiB + 1)) == OomKind::reservation);  // the limit holds it back
  CHECK(classify_over_run(holes_under_a_limit(16_MiB)) == OomKind::reservation);
  CHECK(classify_over_run(holes_under_a_limit(16_MiB + 1)) == OomKind::capacity);  // past the device itself
}

TEST_CASE("a run whose lower bound exceeds the policy's limit gets no headline that another placement fits",
          "[verdict][oom]") {
  // bfc limited to 8 MiB on a 16 MiB card: eight 1 MiB blocks fill its pool, every other one
  // is freed, and 3 MiB fails in the holes (fragmentation at the request). Had it been served,
  // 6 MiB more would follow: the run needs 4 + 3 + 6 = 13 MiB, past the 8 MiB limit.
  TraceBuilder builder({"holes_then_more", "test"});
  std::vector<AllocId> ids;
  for (int i = 0; i < 8; ++i) ids.push_back(builder.alloc(static_cast<Nanos>(i), 1_MiB));
  for (int i = 1; i < 8; i += 2) builder.free(static_cast<Nanos>(10 + i), ids[static_cast<std::size_t>(i)]);
  builder.alloc(20, 3_MiB);
  builder.alloc(21, 6_MiB);
  Scenario scenario;
  scenario.device = card(16_MiB, 0);
  scenario.check = true;
  scenario.tenants.push_back(TenantSpec{std::make_shared<const Trace>(std::move(builder).finish()),
                                        policy_maker("bfc:limit=8MiB"), 0});
  const RunResult run = allocsim::run(scenario);
  const TenantResult& tenant = run.tenants[0];
  REQUIRE(tenant.first_oom());
  const OomRecord& oom = *tenant.first_oom();
  CHECK(oom.event == 12);
  CHECK(oom.request_kind == OomKind::fragmentation);
  CHECK(oom.kind == OomKind::reservation);
  CHECK(tenant.needs == 13_MiB);
  const std::string verdict = describe_verdict(verdict_of(run, tenant), "sim");
  CHECK_THAT(verdict, Catch::StartsWith("tenant 0 does not fit (reservation): needs at least 13 MiB live; the device "
                                        "sim gives this process 16 MiB; held: the policy's memory_limit, 8 MiB below "
                                        "what the device gives"));
  CHECK_THAT(verdict, !Catch::Contains("another placement"));
  CHECK_THAT(verdict, Catch::Contains("the first OOM, 3 MiB at event 12, was fragmentation at the request"));
  // The request's own account leads with its kind at the request, then the run verdict.
  CHECK_THAT(describe_oom(oom), Catch::Contains("3 MiB requested, fragmentation at the request: 4 MiB free in the pool") &&
                                    Catch::EndsWith("; run verdict: reservation"));
  CHECK(format_plain(metric("first_oom_kind").get(run, tenant)) == "reservation");
  CHECK(format_plain(metric("verdict").get(run, tenant)) == "reservation");
  CHECK(format_plain(metric("first_oom_request_kind").get(run, tenant)) == "fragmentation");
  CHECK(format_plain(metric("ooms_fragmentation").get(run, tenant)) == "1");  // counted at the request
  CHECK(format_plain(metric("ooms_reservation").get(run, tenant)) == "0");
  CHECK(describe_request_kinds(tenant) == "fragmentation (1)");
}

TEST_CASE("OOMs at the request are counted by kind, the first OOM's kind first", "[verdict][oom]") {
  // bestfit on an 8 KiB card, --on-oom continue: eight 1 KiB blocks, every other one freed;
  // 3 KiB fails in the holes (fragmentation), 9 KiB beside the 4 KiB live exceeds the card
  // (capacity), 3 KiB fails in the holes again.
  TraceBuilder builder({"counts", "test"});
  std::vector<AllocId> ids;
  for (int i = 0; i < 8; ++i) ids.push_back(builder.alloc(static_cast<Nanos>(i), 1_KiB));
  for (int i = 1; i < 8; i += 2) builder.free(static_cast<Nanos>(10 + i), ids[static_cast<std::size_t>(i)]);
  builder.alloc(20, 3_KiB);
  builder.alloc(21, 9_KiB);
  builder.alloc(22, 3_KiB);
  Scenario scenario;
  scenario.device = card(8_KiB, 0);
  scenario.on_oom = OnOom::continue_run;
  scenario.tenants.push_back(TenantSpec{std::make_shared<const Trace>(std::move(builder).finish()), policy_maker("bestfit"), 0});
  const RunResult run = allocsim::run(scenario);
  const TenantResult& tenant = run.tenants[0];
  REQUIRE(tenant.oom_count == 3);
  CHECK(tenant.ooms[0].request_kind == OomKind::fragmentation);
  CHECK(tenant.ooms[1].request_kind == OomKind::capacity);
  CHECK(tenant.ooms[2].request_kind == OomKind::fragmentation);
  CHECK(describe_request_kinds(tenant) == "fragmentation (2), capacity (1)");
  CHECK(format_plain(metric("ooms_fragmentation").get(run, tenant)) == "2");
  CHECK(format_plain(metric("ooms_capacity").get(run, tenant)) == "1");
  // Were every request served the run would need 4 + 3 + 9 + 3 = 19 KiB: past the card.
  CHECK(format_plain(metric("verdict").get(run, tenant)) == "capacity");
  TenantResult none;
  CHECK(describe_request_kinds(none) == "none");
}

}  // namespace
}  // namespace allocsim
