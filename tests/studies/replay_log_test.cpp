// allocsim replay of an RMM log: every policy from an empty allocator on one device, the
// log's failed requests checked. The fixture is a run on a 1 GiB device: 512 MiB and
// 256 MiB allocated, the 512 MiB freed, then 600 MiB failed (the holes are 512 MiB and
// 256 MiB), then 400 MiB fitted the first hole.
#include <catch2/catch.hpp>

#include "cli_driver.hpp"
#include "policies/registry.hpp"
#include "studies/replay_log.hpp"

namespace allocsim {
namespace {

using Catch::Matchers::Contains;

const std::string kLog = std::string(ALLOCSIM_TEST_DATA) + "/rmm_pool_oom.dev0.csv";

DeviceSpec device_of(Bytes capacity) {
  DeviceSpec device;
  device.capacity = capacity;
  return device;
}

TEST_CASE("replaying an RMM log on the capacity it ran with fails where the log failed", "[replay][rmm-log]") {
  const std::vector<PolicyMaker> policies{policy_maker("rmm-pool:initial=1GiB,maximum=1GiB"), policy_maker("rmm-pool"),
                                          policy_maker("rmm-arena"), policy_maker("async")};
  const LogReplay replay = replay_log_file(kLog, policies, device_of(1_GiB));
  CHECK(replay.reader == "rmm-log");
  CHECK(replay.failures == 1);
  REQUIRE(replay.outcomes.size() == 4);
  for (const LogReplayOutcome& outcome : replay.outcomes) {
    CAPTURE(outcome.policy);
    CHECK(outcome.failures_reproduced == 1);
    CHECK(outcome.ooms_elsewhere == 0);
  }
  // The fixed pool holds the whole device from the start; the growing one 512 MiB, then
  // max(256 MiB, 512 MiB); the async pool a chunk per request until the failure.
  CHECK(replay.outcomes[0].run.tenants[0].peak_reserved == 1_GiB);
  CHECK(replay.outcomes[1].run.tenants[0].peak_reserved == 1_GiB);
  CHECK(replay.outcomes[3].run.tenants[0].peak_reserved == 768_MiB);
  CHECK(replay.outcomes[0].run.tenants[0].peak_allocated == 768_MiB);
}

TEST_CASE("on a larger device the replay serves what the log could not", "[replay][rmm-log]") {
  const LogReplay replay = replay_log_file(kLog, std::vector<PolicyMaker>{policy_maker("rmm-pool")}, device_of(2_GiB));
  CHECK(replay.outcomes[0].failures_reproduced == 0);
  CHECK(replay.outcomes[0].run.tenants[0].oom_count == 0);
}

TEST_CASE("allocsim replay LOG.csv prints one column per policy and checks the failures", "[replay][rmm-log][cli]") {
  const test::Outcome outcome = test::cli({"replay", kLog, "--capacity", "1GiB"});
  INFO(outcome.err);
  REQUIRE(outcome.status == 0);
  CHECK_THAT(outcome.out, Contains("(rmm-log)"));
  CHECK_THAT(outcome.out, Contains("rmm-pool"));
  CHECK_THAT(outcome.out, Contains("rmm-binning"));
  CHECK_THAT(outcome.out, Contains("log's failures failed too"));
  CHECK_THAT(outcome.out, Contains("1 of 1"));
  CHECK(test::cli({"replay", kLog, "--cuda-device", "0"}).status == 2);
  CHECK_THAT(test::cli({"replay", "--help"}).out, Contains("allocsim replay LOG.csv"));
}

}  // namespace
}  // namespace allocsim
