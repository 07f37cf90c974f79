// The cudaMallocAsync pool and its two framework presets, on cases worked by hand.
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include <catch2/catch.hpp>

#include "harness.hpp"
#include "policies/bfc.hpp"
#include "sim/engine.hpp"

namespace allocsim::test {
namespace {

void sync(Harness& harness, SyncKind kind, Stream stream = 0, Stream waits_for = 0) {
  harness.policy().synchronize(Sync{kind, stream, waits_for}, 0);
  harness.check();
}

TEST_CASE("async grows by chunks of the granularity and carves blocks from them", "[async]") {
  Harness harness("async", plain_device(64_MiB));
  const auto a = harness.alloc(1);
  CHECK(a->size == 256);
  CHECK(harness.policy().stats().reserved == 2_MiB);
  const auto b = harness.alloc(2_MiB - 256);  // exactly the rest of the chunk
  CHECK(b->addr == a->addr + 256);
  CHECK(harness.policy().stats().reserved == 2_MiB);
  harness.alloc(2_MiB + 1);  // a new chunk of 4 MiB
  CHECK(harness.policy().stats().reserved == 6_MiB);
  CHECK(harness.device().stats().mallocs == 2);
  harness.finish();

  Harness coarse("async:granularity=32MiB", plain_device(64_MiB));
  coarse.alloc(1);
  CHECK(coarse.policy().stats().reserved == 32_MiB);
  coarse.finish();
  CHECK_THROWS_WITH(Harness("async:granularity=100", plain_device(64_MiB)),
                    "policy async: granularity must be a multiple of 256 B, not 100 B");
}

TEST_CASE("async trims above the release threshold at a host synchronisation, not before", "[async]") {
  for (const auto& [threshold, kept] : {std::pair{"0", Bytes{0}}, std::pair{"2097151", Bytes{0}},
                                        std::pair{"2MiB", 2_MiB}, std::pair{"max", 2_MiB}}) {
    CAPTURE(threshold);
    Harness harness(std::string("async:release_threshold=") + threshold, plain_device(64_MiB));
    harness.free(*harness.alloc(1_MiB));
    CHECK(harness.policy().stats().reserved == 2_MiB);  // a free alone releases nothing
    sync(harness, SyncKind::wait, 1, 0);                // a stream waiting is no host sync
    CHECK(harness.policy().stats().reserved == 2_MiB);
    sync(harness, SyncKind::stream, 1);  // another stream: the free on stream 0 is not complete
    CHECK(harness.policy().stats().reserved == 2_MiB);
    sync(harness, SyncKind::event, 0);
    CHECK(harness.policy().stats().reserved == kept);
    harness.finish();
  }
}

TEST_CASE("async keeps a chunk with a live block and trims the highest free chunk first", "[async]") {
  Harness harness("async:release_threshold=2MiB", plain_device(64_MiB));
  const auto low = harness.alloc(2_MiB);
  const auto mid = harness.alloc(2_MiB);
  const auto high = harness.alloc(2_MiB);
  harness.alloc(2_MiB);  // stays live
  harness.free(*low);
  harness.free(*mid);
  harness.free(*high);
  sync(harness, SyncKind::device);  // 8 MiB held, 6 MiB of it free: down to 2 MiB, the live chunk
  CHECK(harness.policy().stats().reserved == 2_MiB);
  harness.finish();
}

TEST_CASE("release_cached syncs the device and trims to trim_to", "[async]") {
  Harness harness("async:release_threshold=max,trim_to=2MiB", plain_device(64_MiB));
  const auto a = harness.alloc(2_MiB);
  const auto b = harness.alloc(2_MiB, 1);
  harness.free(*a);
  harness.free(*b);
  harness.policy().release_cached();
  CHECK(harness.policy().stats().reserved == 2_MiB);
  harness.finish();
}

// A block freed on stream 1, then a request on stream 2: which rule lets it reuse the
// memory, and what must have happened between. Reuse keeps the pool at one chunk.
enum class Between : std::uint8_t { nothing, wait, host_sync };
struct ReuseCase {
  const char* on;  // the one rule on ("" for none), and its options
  Between between;
  bool reuses;
};

TEST_CASE("each reuse rule across two streams, on and off", "[async]") {
  const ReuseCase cases[] = {
      {"", Between::nothing, false},  // no rule: never across streams without a host sync
      {"", Between::wait, false},
      {"", Between::host_sync, true},  // "still reuse memory ... when a stream is synchronized with the CPU"
      {"follow_event_dependencies=true", Between::wait, true},
      {"follow_event_dependencies=true", Between::nothing, false},
      {"opportunistic=true", Between::nothing, true},  // completed at once on the GPU
      {"opportunistic=true,completion_ns=1000", Between::nothing, false},  // not completed yet
      {"opportunistic=true,completion_ns=1000", Between::host_sync, true},
      {"internal_dependencies=true", Between::nothing, true},
  };
  for (const ReuseCase& c : cases) {
    // Every rule off, then the case's own keys in place of the defaults they name: a key is
    // given once.
    std::vector<std::pair<std::string, std::string>> keys{{"release_threshold", "max"},
                                                          {"follow_event_dependencies", "false"},
                                                          {"opportunistic", "false"},
                                                          {"internal_dependencies", "false"}};
    for (std::string_view rest = c.on; !rest.empty();) {
      const std::string_view item = rest.substr(0, rest.find(','));
      rest.remove_prefix(std::min(rest.size(), item.size() + 1));
      const std::string key(item.substr(0, item.find('=')));
      const std::string value(item.substr(item.find('=') + 1));
      const auto known = std::find_if(keys.begin(), keys.end(), [&](const auto& kv) { return kv.first == key; });
      if (known != keys.end()) {
        known->second = value;
      } else {
        keys.emplace_back(key, value);
      }
    }
    std::string spec = "async:";
    for (const auto& [key, value] : keys) spec += (spec.back() == ':' ? "" : ",") + key + "=" + value;
    CAPTURE(spec, static_cast<int>(c.between));
    Harness harness(spec, plain_device(64_MiB));
    const auto first = harness.alloc(1_MiB, 1);
    harness.free(*first);
    if (c.between == Between::wait) sync(harness, SyncKind::wait, 2, 1);
    if (c.between == Between::host_sync) sync(harness, SyncKind::stream, 1);
    const auto second = harness.alloc(1_MiB, 2);
    CHECK((second->addr == first->addr) == c.reuses);
    CHECK(harness.policy().stats().reserved == (c.reuses ? 2_MiB : 4_MiB));
    harness.finish();
  }
}

TEST_CASE("a wait before the free is no dependency on it; the same stream reuses at once", "[async]") {
  Harness harness("async:release_threshold=max,opportunistic=false,internal_dependencies=false",
                  plain_device(64_MiB));
  const auto first = harness.alloc(2_MiB, 1);
  sync(harness, SyncKind::wait, 2, 1);
  harness.free(*first);
  CHECK(harness.alloc(2_MiB, 2)->addr != first->addr);
  CHECK(harness.alloc(2_MiB, 1)->addr == first->addr);
  harness.finish();
}

TEST_CASE("an internal dependency makes the streams ordered: later frees follow it", "[async]") {
  Harness harness("async:release_threshold=max,opportunistic=false", plain_device(64_MiB));
  const auto a = harness.alloc(2_MiB, 1);
  harness.free(*a);
  CHECK(harness.alloc(2_MiB, 2)->addr == a->addr);  // by an inserted wait
  const auto inspection = harness.policy().inspect(Detail::counters);
  const auto reuses = std::find_if(inspection.extra.begin(), inspection.extra.end(),
                                   [](const PolicyStat& stat) { return stat.name == "cross_stream_reuses"; });
  REQUIRE(reuses != inspection.extra.end());
  CHECK(reuses->value == 1);
  harness.finish();
}

TEST_CASE("async's oom_sync trims and retries once when the device refuses a chunk", "[async]") {
  for (const auto& [oom_sync, fits] : {std::pair{"none", false}, std::pair{"stream", true}, std::pair{"device", true}}) {
    CAPTURE(oom_sync);
    Harness harness(std::string("async:oom_sync=") + oom_sync, plain_device(8_MiB));
    harness.free(*harness.alloc(4_MiB));
    // 6 MiB fits no free range; 4 + 6 MiB exceed the device until the free chunk goes back.
    CHECK(static_cast<bool>(harness.alloc(6_MiB)) == fits);
    harness.finish();
  }
}

TEST_CASE("torch-async never trims at a sync, caps requested bytes by fraction, empties to 0", "[async]") {
  Harness harness("torch-async:fraction=0.5", plain_device(64_MiB));
  const auto a = harness.alloc(32_MiB - 1);
  REQUIRE(a);
  CHECK(a->size == 32_MiB);
  CHECK(harness.alloc(1));          // 32 MiB requested: exactly the cap
  CHECK_FALSE(harness.alloc(1));    // one byte over it
  CHECK(harness.policy().stats().limit == 32_MiB);
  harness.free_all();
  sync(harness, SyncKind::device);
  CHECK(harness.policy().stats().reserved == 34_MiB);  // the 32 MiB chunk and a 2 MiB one
  harness.policy().release_cached();
  CHECK(harness.policy().stats().reserved == 0);
  harness.finish();
}

TEST_CASE("tf-async keeps up to TensorFlow's memory limit and preallocates it on request", "[async]") {
  DeviceSpec spec = plain_device(16_GiB);
  const Bytes limit = 16_GiB - tf_min_system_memory(16_GiB, 9);  // 14584 MiB on an sm_90 card
  Harness harness("tf-async:prealloc=threshold", spec);
  harness.alloc(1_MiB, 3);
  CHECK(harness.policy().stats().reserved == limit);  // the preallocation's chunk, reused
  sync(harness, SyncKind::device);
  CHECK(harness.policy().stats().reserved == limit);
  harness.finish();

  Harness plain("tf-async", spec);
  const auto first = plain.alloc(1_MiB, 1);
  plain.free(*first);
  CHECK(plain.alloc(1_MiB, 2)->addr == first->addr);  // one stream: every request is on it
  plain.finish();
}

TEST_CASE("TF_DETERMINISTIC_ALLOCATOR turns off opportunistic and internal reuse", "[async]") {
  for (const bool deterministic : {false, true}) {
    CAPTURE(deterministic);
    Harness harness(std::string("async:release_threshold=max,deterministic=") + (deterministic ? "true" : "false"),
                    plain_device(64_MiB));
    const auto first = harness.alloc(1_MiB, 1);
    harness.free(*first);
    CHECK((harness.alloc(1_MiB, 2)->addr == first->addr) == !deterministic);
    harness.finish();
  }
}

TEST_CASE("a sync in a trace reaches the pool through the engine", "[async][engine]") {
  // 1 MiB allocated and freed holds a 2 MiB chunk; a 3 MiB request needs a 4 MiB chunk,
  // which fits the 4 MiB device only if a sync trimmed the first chunk in between.
  for (const bool with_sync : {false, true}) {
    CAPTURE(with_sync);
    TraceBuilder builder({"sync", "test"});
    builder.free(1, builder.alloc(0, 1_MiB));
    if (with_sync) builder.sync(2, Sync{SyncKind::device, 0, 0});
    builder.alloc(3, 3_MiB);
    Scenario scenario;
    scenario.device.capacity = 4_MiB;
    scenario.check = true;
    scenario.tenants.push_back(TenantSpec{std::make_shared<const Trace>(std::move(builder).finish()), policy_maker("async"), 0});
    const RunResult run = allocsim::run(scenario);
    CHECK(run.tenants[0].oom_count == (with_sync ? 0 : 1));
  }
}

}  // namespace
}  // namespace allocsim::test
