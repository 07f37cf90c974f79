// check_policy_spec: a policy spec is checked whole, name, keys and values, by the
// policy's own code on an idle device, before any trace is loaded.
#include <catch2/catch.hpp>

#include "policies/registry.hpp"
#include "sim/error.hpp"

namespace allocsim {
namespace {

TEST_CASE("check_policy_spec accepts every registered policy and its defaults", "[registry]") {
  for (const PolicyInfo& info : all_policies()) {
    INFO(info.name);
    CHECK_NOTHROW(check_policy_spec(info.name));
  }
  CHECK_NOTHROW(check_policy_spec("bfc:growth=true"));
  CHECK_NOTHROW(check_policy_spec("caching:max_split_size=256MiB"));
}

TEST_CASE("check_policy_spec names the bad name, key or value", "[registry]") {
  CHECK_THROWS_WITH(check_policy_spec("nosuch"), Catch::Contains("unknown policy 'nosuch'"));
  CHECK_THROWS_WITH(check_policy_spec("bfc:bogus=1"), Catch::Contains("unknown key 'bogus'"));
  // Values only the policy's constructor reads: the name-only check let these through.
  CHECK_THROWS_WITH(check_policy_spec("bfc:frag_fraction=2"), Catch::Contains("frag_fraction"));
  CHECK_THROWS_WITH(check_policy_spec("bfc:growth=maybe"), Catch::Contains("growth=maybe"));
  CHECK_THROWS_WITH(check_policy_spec("caching:max_split_size=1MiB"), Catch::Contains("max_split_size"));
  CHECK_THROWS_WITH(check_policy_spec("buddy:min_block=3"), Catch::Contains("min_block"));
  CHECK_THROWS_AS(check_policy_spec("bestfit:region"), Error);  // not key=value
}

}  // namespace
}  // namespace allocsim
