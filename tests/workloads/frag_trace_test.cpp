// The fragmentation workloads: their shapes, and the seed article's case replayed: the
// placements fail it for fragmentation, compaction and page stitching serve it.
#include <catch2/catch.hpp>

#include "policies/registry.hpp"
#include "sim/engine.hpp"
#include "sim/error.hpp"
#include "workloads/catalogue.hpp"

namespace allocsim::test {
namespace {

TenantResult replay_seed(const std::string& policy) {
  Scenario scenario;
  scenario.device.capacity = 8_GiB;
  scenario.check = true;
  scenario.tenants.push_back(TenantSpec{std::make_shared<const Trace>(load_workload("frag:pattern=seed")), policy_maker(policy), 0});
  return run(scenario).tenants[0];
}

TEST_CASE("frag:pattern=seed is 4 GiB of weights with 1 GiB holes, then 3 GiB", "[frag]") {
  const Trace trace = load_workload("frag:pattern=seed");
  CHECK(trace.allocations() == 9);
  CHECK(trace.bytes_of(AllocId{8}) == 3_GiB);
  CHECK(trace.live_lower_bound == 8_GiB);  // all eight, before the temporaries go
}

TEST_CASE("the seed case: placements fail for fragmentation, compact and vmm serve it", "[frag]") {
  for (const char* policy : {"bestfit", "firstfit", "bfc:reserve=0"}) {
    CAPTURE(policy);
    const TenantResult result = replay_seed(policy);
    REQUIRE(result.oom_count == 1);
    CHECK(result.first_oom()->kind == OomKind::fragmentation);
    CHECK(result.first_oom()->bytes == 3_GiB);
  }
  const TenantResult slid = replay_seed("compact:prealloc=true,strategy=slide");
  CHECK(slid.oom_count == 0);
  CHECK(slid.bytes_moved == 3_GiB);  // the three kept blocks above the first slide down
  const TenantResult gap = replay_seed("compact:prealloc=true");  // strategy=gap
  CHECK(gap.oom_count == 0);
  CHECK(gap.bytes_moved == 1_GiB);   // one kept block leaves a 3 GiB window
  const TenantResult stitched = replay_seed("vmm");
  CHECK(stitched.oom_count == 0);
  CHECK(stitched.bytes_moved == 0);
}

TEST_CASE("frag patterns build valid traces; padding costs more bytes than bucketing", "[frag]") {
  for (const char* spec : {"frag:pattern=alternating", "frag:pattern=sawtooth,steps=3", "frag:pattern=padded",
                           "frag:pattern=bucketed"}) {
    CAPTURE(spec);
    CHECK(load_workload(spec).events.size() > 0);
  }
  const Trace padded = load_workload("frag:pattern=padded,steps=4");
  const Trace bucketed = load_workload("frag:pattern=bucketed,steps=4");
  CHECK(padded.live_lower_bound >= bucketed.live_lower_bound);
  CHECK_THROWS_AS(load_workload("frag:pattern=zigzag"), Error);
  CHECK_THROWS_AS(load_workload("frag:pattern=padded,min_len=600"), Error);
}

}  // namespace
}  // namespace allocsim::test
