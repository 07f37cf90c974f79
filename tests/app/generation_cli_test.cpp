// A generation as the command line shows it: its steps are the prefill and the decode
// steps, not a training job's warm-up and steady state; the token table lists its keys.
#include <catch2/catch.hpp>

#include "cli_driver.hpp"

namespace allocsim {
namespace {

using namespace test;

constexpr const char* kGeneration =
    "decoder_bf16_infer_prefill8_decode4_b2:layers=2,d_model=64,heads=4,d_ff=128,vocab=100,rope,attn=sdpa";

TEST_CASE("cli: a generation's peak names its decode step", "[cli][generation]") {
  const Outcome run = cli({"run", "--workload", kGeneration, "--policy", "caching"});
  INFO(run.err);
  REQUIRE(run.status == 0);
  CHECK_THAT(run.out, Catch::Matches("(.|\n)*, step [1-5] of 5 \\((the prefill|decode step [1-4])\\)\\): (.|\n)*"));
  CHECK_THAT(run.out, !Catch::Contains("steady state"));
  const Outcome listing = cli({"workloads"});
  CHECK_THAT(listing.out, Catch::Contains("cache=paged") && Catch::Contains("len=MIN:MAX") && Catch::Contains("prefillN"));
}

TEST_CASE("cli: maxbatch searches a generation's batch, in the compute dtype and with amp", "[cli][generation]") {
  const Outcome run = cli({"maxbatch", "--workload", "tinyllama_1b_infer_prefill8_decode4:layers=1", "--policy", "caching",
                           "--capacity", "2GiB"});
  INFO(run.err);
  REQUIRE(run.status == 0);
  CHECK_THAT(run.out, Catch::Contains("with amp") && !Catch::Contains("with acc"));
}

}  // namespace
}  // namespace allocsim
