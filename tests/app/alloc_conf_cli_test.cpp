// --alloc-conf as a PyTorch user types it, in the commands that take --policy.
#include <sstream>
#include <string>

#include <catch2/catch.hpp>

#include "cli_driver.hpp"

namespace allocsim {
namespace {

using Catch::Contains;
using namespace test;

// The table without its wall-clock rows.
std::string without_timing(const std::string& text) {
  std::istringstream lines(text);
  std::string kept;
  for (std::string line; std::getline(lines, line);) {
    if (line.find("replay_seconds") == std::string::npos && line.find("events_per_second") == std::string::npos) {
      kept += line + '\n';
    }
  }
  return kept;
}

TEST_CASE("alloc-conf cli: PyTorch's allocator configured as PYTORCH_CUDA_ALLOC_CONF would", "[alloc-conf][cli]") {
  const std::string workload = "random:n=2000,seed=3";
  const Outcome conf = cli({"run", "--workload", workload, "--alloc-conf", "expandable_segments:True,max_split_size_mb:64"});
  const Outcome spec = cli({"run", "--workload", workload, "--policy", "expandable:max_split_size=64MiB"});
  REQUIRE(conf.status == 0);
  REQUIRE(spec.status == 0);
  CHECK(without_timing(conf.out) == without_timing(spec.out));  // the same policy, reached by PyTorch's words

  const Outcome warned = cli({"run", "--workload", workload, "--alloc-conf", "garbage_collection_threshold:0.8"});
  CHECK(warned.status == 0);
  CHECK_THAT(warned.out, Contains("warning: --alloc-conf garbage_collection_threshold has no effect without a memory fraction"));

  const Outcome both = cli({"run", "--workload", workload, "--policy", "bfc", "--alloc-conf", "expandable_segments:True"});
  CHECK(both.status == 2);
  CHECK_THAT(both.err, Contains("give --policy or --alloc-conf, not both"));

  // A list command takes it as one more policy.
  const Outcome compared = cli({"compare", "--workload", workload, "--policy", "caching", "--alloc-conf", "expandable_segments:True"});
  CHECK(compared.status == 0);
  CHECK_THAT(compared.out, Contains("expandable"));

  const Outcome near_miss = cli({"run", "--workload", workload, "--policy", "expandable_segments:True"});
  CHECK(near_miss.status == 2);
  CHECK_THAT(near_miss.err, Contains("give --alloc-conf expandable_segments:True") && Contains("--policy expandable"));
}

}  // namespace
}  // namespace allocsim
