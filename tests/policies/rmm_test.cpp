// RMM's pool, arena, binning and limiting resources, on cases worked by hand from the rules
// in ../shared/reference/allocators.md section 4.
#include <algorithm>

#include <catch2/catch.hpp>

#include "harness.hpp"
#include "policies/rmm_pool.hpp"
#include "sim/engine.hpp"
#include "workloads/random_trace.hpp"

namespace allocsim::test {
namespace {

std::uint64_t extra(Harness& harness, std::string_view name) {
  const auto inspection = harness.policy().inspect(Detail::counters);
  const auto it = std::find_if(inspection.extra.begin(), inspection.extra.end(),
                               [&](const PolicyStat& stat) { return stat.name == name; });
  REQUIRE(it != inspection.extra.end());
  return it->value;
}

Bytes reserved(Harness& harness) { return harness.policy().stats().reserved; }

TEST_CASE("rmm-pool grows by at least doubling without a maximum", "[rmm]") {
  Harness harness("rmm-pool", plain_device(64_MiB));
  harness.alloc(1_MiB);
  CHECK(reserved(harness) == 1_MiB);  // max(1 MiB, pool 0)
  harness.alloc(1_MiB);
  CHECK(reserved(harness) == 2_MiB);  // max(1 MiB, 1 MiB)
  harness.alloc(1_MiB);
  CHECK(reserved(harness) == 4_MiB);  // max(1 MiB, 2 MiB): 1 MiB of it left free
  harness.alloc(1_MiB);
  CHECK(reserved(harness) == 4_MiB);
  CHECK(extra(harness, "pool_growths") == 3);
  CHECK(harness.alloc(257)->size == 512);  // nothing free: max(512 B, 4 MiB)
  CHECK(reserved(harness) == 8_MiB);
  CHECK(extra(harness, "pool_growths") == 4);
  harness.finish();
}

TEST_CASE("rmm-pool's growth with a maximum, and halving when the upstream refuses", "[rmm]") {
  CHECK(RmmPoolPolicy::size_to_grow(1_MiB, 0, 8_MiB) == 4_MiB);        // half the room left
  CHECK(RmmPoolPolicy::size_to_grow(5_MiB, 4_MiB, 8_MiB) == 0);        // over the room: cannot grow
  CHECK(RmmPoolPolicy::size_to_grow(4_MiB, 4_MiB, 8_MiB) == 4_MiB);    // exactly the room
  CHECK(RmmPoolPolicy::size_to_grow(3_MiB + 1, 2_MiB, std::nullopt) == 3_MiB + 1);

  Harness capped("rmm-pool:maximum=8MiB", plain_device(64_MiB));
  capped.alloc(1_MiB);
  CHECK(reserved(capped) == 4_MiB);
  capped.alloc(4_MiB);  // 3 MiB free is too little: max(4 MiB, 4 MiB / 2)
  CHECK(reserved(capped) == 8_MiB);
  CHECK_FALSE(capped.alloc(4_MiB));  // "not enough room to grow"
  CHECK(capped.policy().stats().limit == 8_MiB);
  capped.finish();

  Harness refused("rmm-pool", plain_device(10_MiB));
  refused.alloc(6_MiB);
  refused.alloc(3_MiB);  // asks for 6 MiB (the pool size), refused, then 3 MiB
  CHECK(reserved(refused) == 9_MiB);
  CHECK_FALSE(refused.alloc(2_MiB));  // 1 MiB left: 2 MiB refused and it is the minimum
  refused.finish();
}

TEST_CASE("rmm-pool coalesces inside an upstream block, never across two", "[rmm]") {
  Harness one("rmm-pool:initial=4MiB", plain_device(64_MiB));
  const auto x = one.alloc(1_MiB);
  const auto y = one.alloc(1_MiB);
  const auto z = one.alloc(1_MiB);
  one.free(*x);
  one.free(*z);
  CHECK(one.policy().stats().largest_free == 2_MiB);  // z merged with the free tail
  one.free(*y);
  CHECK(one.policy().stats().largest_free == 4_MiB);
  one.finish();

  Harness two("rmm-pool", plain_device(64_MiB));
  const auto a = two.alloc(1_MiB);
  const auto b = two.alloc(1_MiB);
  REQUIRE(b->addr == a->addr + 1_MiB);  // two upstream blocks that touch
  two.free(*a);
  two.free(*b);
  CHECK(two.policy().stats().largest_free == 1_MiB);
  two.alloc(2_MiB);  // fits neither: the pool grows by max(2 MiB, 2 MiB)
  CHECK(reserved(two) == 4_MiB);
  two.finish();
}

TEST_CASE("rmm-pool takes from other streams' lists, then merges them", "[rmm]") {
  Harness harness("rmm-pool:initial=4MiB", plain_device(64_MiB));
  const auto a = harness.alloc(1_MiB, 1);  // from stream 0's list (the initial block)
  const auto b = harness.alloc(3_MiB, 0);  // the rest, left in stream 0's list
  CHECK(b->addr == a->addr + 1_MiB);
  CHECK(extra(harness, "blocks_from_other_streams") == 1);
  harness.free(*a);  // into stream 1's list
  harness.free(*b);  // into stream 0's list: the two do not merge across lists
  CHECK(harness.policy().stats().largest_free == 3_MiB);
  const auto whole = harness.alloc(4_MiB, 0);  // merging stream 1's list in makes 4 MiB
  CHECK(whole->addr == a->addr);
  CHECK(reserved(harness) == 4_MiB);
  harness.finish();
}

TEST_CASE("rmm-arena carves superblocks for streams and keeps them until a defragment", "[rmm]") {
  Harness harness("rmm-arena:arena_size=8MiB", plain_device(64_MiB));
  const auto s1a = harness.alloc(1_KiB, 1);
  const auto s1b = harness.alloc(1_KiB, 1);
  CHECK(s1b->addr == s1a->addr + 1_KiB);  // the same 1 MiB superblock, first fit
  const auto s2 = harness.alloc(1_KiB, 2);
  CHECK(s2->addr == s1a->addr + 1_MiB);  // stream 2 acquires the next superblock
  CHECK(reserved(harness) == 8_MiB);
  harness.free(*s1a);
  harness.free(*s1b);
  CHECK(extra(harness, "stream_superblocks") == 2);  // stream 1 keeps its empty superblock
  // 7 MiB: the global [2, 8) MiB is too small; defragmenting returns stream 1's superblock,
  // but stream 2's (live) sits between it and the tail.
  CHECK_FALSE(harness.alloc(7_MiB));
  CHECK(extra(harness, "defragments") == 1);
  CHECK(extra(harness, "stream_superblocks") == 0);
  harness.free(*s2);  // found in the global arena now; everything merges into one superblock
  CHECK(extra(harness, "global_superblocks") == 1);
  const auto big = harness.alloc(7_MiB);
  CHECK(big->addr == s1a->addr);
  CHECK(extra(harness, "defragments") == 1);
  CHECK(extra(harness, "global_superblocks") == 2);  // [0, 7) and the 1 MiB tail
  harness.finish();
}

TEST_CASE("rmm-arena's large blocks stay global and merge back when freed", "[rmm]") {
  Harness harness("rmm-arena:arena_size=8MiB", plain_device(64_MiB));
  const auto large = harness.alloc(1_MiB + 1);  // over 1 MiB: the global arena
  CHECK(large->size == 1_MiB + 256);
  CHECK(extra(harness, "global_superblocks") == 2);  // split: [0, 1 MiB + 256) and the tail
  CHECK(extra(harness, "stream_superblocks") == 0);
  harness.free(*large);
  CHECK(extra(harness, "global_superblocks") == 1);  // empty again: merged with the tail
  const auto exact = harness.alloc(1_MiB);  // 1 MiB is small: a stream superblock of 1 MiB
  CHECK(exact->addr == large->addr);
  CHECK(extra(harness, "stream_superblocks") == 1);
  harness.finish();
  CHECK_THROWS_WITH(Harness("rmm-arena:arena_size=1000000", plain_device(64_MiB)),
                    Catch::Contains("is smaller than the 1 MiB minimum superblock"));
}

TEST_CASE("rmm-binning routes by the smallest bin at least the request, FIFO in a bin", "[rmm]") {
  Harness harness("rmm-binning:min_exp=18,max_exp=20,blocks=2,upstream=cuda", plain_device(64_MiB));
  const auto low = harness.alloc(256_KiB);
  CHECK(low->size == 256_KiB);
  CHECK(reserved(harness) == 512_KiB);  // one chunk of two blocks
  CHECK(harness.alloc(256_KiB + 1)->size == 512_KiB);
  CHECK(harness.alloc(1_MiB)->size == 1_MiB);
  CHECK(reserved(harness) == 512_KiB + 1_MiB + 2_MiB);
  CHECK(harness.alloc(1_MiB + 1)->size == 1_MiB + 1);  // no bin: the upstream itself
  CHECK(reserved(harness) == 512_KiB + 1_MiB + 2_MiB + 1_MiB + 1);
  const auto second = harness.alloc(1);
  CHECK(second->addr == low->addr + 256_KiB);
  harness.free(*second);
  harness.free(*low);
  CHECK(harness.alloc(7)->addr == second->addr);  // first freed, first reused
  harness.alloc(7);
  harness.alloc(7);  // both blocks out: a second chunk
  CHECK(extra(harness, "bin_chunks") == 4);
  harness.finish();
  CHECK_THROWS_WITH(Harness("rmm-binning:min_exp=18", plain_device(64_MiB)),
                    "policy rmm-binning: give both min_exp and max_exp, or neither");
}

TEST_CASE("rmm-binning over its default pool: reserved is the pool's", "[rmm]") {
  Harness harness("rmm-binning:min_exp=10,max_exp=10,blocks=4", plain_device(64_MiB));
  harness.alloc(1);
  CHECK(reserved(harness) == 4_KiB);  // the pool grew by the bin's one chunk
  harness.alloc(8_KiB);
  CHECK(reserved(harness) == 12_KiB);  // and grew by max(8 KiB, 4 KiB) for the direct request
  harness.finish();
  Harness nested("rmm-binning:min_exp=10,max_exp=10,upstream=[rmm-pool:initial=1MiB,maximum=1MiB]",
                 plain_device(64_MiB));
  nested.alloc(1);
  CHECK(reserved(nested) == 1_MiB);
  CHECK_FALSE(nested.alloc(1_MiB));  // the pool is full: 128 KiB of bins in it
  nested.finish();
}

TEST_CASE("limiting counts aligned request bytes against its limit, not what the upstream holds", "[rmm]") {
  Harness harness("limiting:limit=1MiB,upstream=[rmm-pool]", plain_device(64_MiB));
  const auto first = harness.alloc(1_MiB - 255);  // counts 1 MiB
  REQUIRE(first);
  CHECK_FALSE(harness.alloc(1));  // 256 more would pass the limit
  harness.free(*first);
  CHECK(harness.alloc(1));
  CHECK(harness.policy().stats().limit == 1_MiB);
  CHECK(reserved(harness) == 1_MiB);  // served from the pool's free block
  harness.finish();
  Harness plain("limiting", plain_device(64_MiB));  // no limit, the device directly
  CHECK(plain.alloc(40_MiB));
  plain.finish();
}

}  // namespace
}  // namespace allocsim::test

namespace allocsim::test {
namespace {

TEST_CASE("composed resources pass the engine's checks: reserved is what the device holds", "[rmm][engine]") {
  RandomTraceOptions options;
  options.events = 20'000;
  options.seed = 11;
  options.max_bytes = 4_MiB;
  options.target_live = 64_MiB;
  options.streams = 3;
  const auto trace = std::make_shared<const Trace>(make_random_trace(options, "random"));
  for (const char* spec : {"rmm-binning:min_exp=12,max_exp=20,blocks=8,upstream=[rmm-pool:initial=16MiB]",
                           "limiting:limit=96MiB,upstream=[rmm-arena:arena_size=256MiB]",
                           "rmm-pool:upstream=[limiting:limit=512MiB]"}) {
    CAPTURE(spec);
    Scenario scenario;
    scenario.device.capacity = 1_GiB;
    scenario.check = true;  // policy.check(), and stats against the device, after every event
    scenario.on_oom = OnOom::continue_run;
    scenario.tenants.push_back(TenantSpec{trace, policy_maker(spec), 0});
    const RunResult run = allocsim::run(scenario);
    CHECK(run.tenants[0].events_replayed == trace->events.size());
    CHECK(run.tenants[0].peak_reserved > 0);
  }
}

}  // namespace
}  // namespace allocsim::test
