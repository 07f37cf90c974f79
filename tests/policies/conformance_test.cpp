// What every registered policy promises, checked on each one in the registry.
#include <catch2/catch.hpp>

#include "harness.hpp"
#include "sim/engine.hpp"
#include "workloads/random_trace.hpp"

namespace allocsim::test {
namespace {

std::string any_policy() {
  const auto index = GENERATE(range(std::size_t{0}, all_policies().size()));
  return std::string(all_policies()[index].name);
}

RandomTraceOptions random_options(std::size_t events, std::uint64_t seed, Bytes max_bytes, Bytes target_live) {
  RandomTraceOptions options;
  options.events = events;
  options.seed = seed;
  options.max_bytes = max_bytes;
  options.target_live = target_live;
  return options;
}

TEST_CASE("every policy serves a zero-byte request and takes it back", "[conformance]") {
  const std::string policy = any_policy();
  CAPTURE(policy);
  Harness harness(policy, plain_device(64_MiB));
  const auto block = harness.alloc(0);
  REQUIRE(block);
  harness.free(*block);
  harness.finish();
}

TEST_CASE("every policy hands out distinct, aligned, non-overlapping blocks", "[conformance]") {
  const std::string policy = any_policy();
  CAPTURE(policy);
  Harness harness(policy, plain_device(256_MiB));
  for (int round = 0; round < 2; ++round) {
    for (Bytes bytes : {Bytes{1}, Bytes{255}, Bytes{256}, Bytes{257}, Bytes{4096}, 1_MiB, 3_MiB + 1}) {
      REQUIRE(harness.alloc(bytes));
    }
  }
  REQUIRE(harness.live_count() == 14);
  harness.finish();
}

TEST_CASE("every policy's rounded_size is no more than the blocks it hands out", "[conformance]") {
  // The verdict's lower bound sums rounded_size over the trace: it must never exceed a block.
  const std::string policy = any_policy();
  CAPTURE(policy);
  Harness harness(policy, plain_device(256_MiB));
  for (Bytes bytes : {Bytes{0}, Bytes{1}, Bytes{255}, Bytes{256}, Bytes{257}, Bytes{513}, Bytes{4097}, 1_MiB + 1,
                      3_MiB + 1, 21_MiB}) {
    CAPTURE(bytes);
    const auto block = harness.alloc(bytes);
    REQUIRE(block);
    CHECK(harness.policy().rounded_size(bytes) <= block->size);
    CHECK(harness.policy().rounded_size(bytes) >= bytes);
  }
  harness.finish();
}

TEST_CASE("every policy reuses freed memory, and an OOM leaves live blocks alone", "[conformance]") {
  const std::string policy = any_policy();
  CAPTURE(policy);
  Harness harness(policy, plain_device(64_MiB));
  const auto first = harness.alloc(40_MiB);
  REQUIRE(first);
  REQUIRE_FALSE(harness.alloc(40_MiB));  // two cannot fit in 64 MiB; the harness checks nothing moved
  harness.free(*first);
  REQUIRE(harness.alloc(40_MiB));
  harness.finish();
}

TEST_CASE("every policy returns its memory on release_cached once nothing is live", "[conformance]") {
  const std::string policy = any_policy();
  CAPTURE(policy);
  Harness harness(policy, plain_device(64_MiB));
  for (Bytes bytes : {1_KiB, 1_MiB, 5_MiB}) REQUIRE(harness.alloc(bytes));
  harness.free_all();
  harness.policy().release_cached();
  CHECK(harness.policy().stats().reserved == 0);
  CHECK(harness.device().used() == 0);
  REQUIRE(harness.alloc(1_MiB));  // and it can start again
  harness.finish();
}

TEST_CASE("every policy survives a seeded 100k-event random trace, checked after every event", "[conformance]") {
  const std::string policy = any_policy();
  CAPTURE(policy);
  const Trace trace = make_random_trace(random_options(100'000, 7, 4_MiB, 64_MiB), "random");
  Harness harness(policy, plain_device(1_GiB));
  std::vector<std::optional<Block>> blocks(trace.allocations());
  for (const Event& event : trace.events) {
    if (event.op == Op::alloc) {
      blocks[index_of(event.id)] = harness.alloc(trace.bytes_of(event.id), event.stream);
      REQUIRE(blocks[index_of(event.id)]);
    } else if (event.op == Op::free) {
      harness.free(*blocks[index_of(event.id)]);
    }
  }
  harness.finish();
}

TEST_CASE("every policy keeps the engine's invariants when memory runs out", "[conformance]") {
  const std::string policy = any_policy();
  CAPTURE(policy);
  // More live bytes than the device has: OOMs of every kind happen.
  const RandomTraceOptions options = random_options(20'000, 11, 8_MiB, 96_MiB);
  Scenario scenario;
  scenario.device.capacity = 64_MiB;
  scenario.on_oom = OnOom::continue_run;
  scenario.check = true;  // invariants after every event, and the device empty at the end
  scenario.tenants.push_back(TenantSpec{std::make_shared<const Trace>(make_random_trace(options, "random")), policy_maker(policy), 0});
  const RunResult result = run(scenario);
  CHECK(result.tenants[0].oom_count > 0);
  CHECK(result.tenants[0].events_replayed == options.events);
}

}  // namespace
}  // namespace allocsim::test
