// parse_policy_spec: a policy spec read into its registry row, keys checked; check_policy_spec:
// checked whole, name, keys and values, by the policy's own code on an idle device, before
// any trace is loaded.
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

TEST_CASE("parse_policy_spec finds the row by name or alias and checks the keys, not the values", "[registry]") {
  const PolicySpec torch = parse_policy_spec("torch:max_split_size=256MiB");
  CHECK(torch.row == &find_policy("caching"));
  CHECK(torch.text == "torch:max_split_size=256MiB");
  CHECK(torch.params.bytes("max_split_size") == Bytes{256} << 20);
  CHECK_THROWS_WITH(parse_policy_spec("nosuch"), Catch::Contains("unknown policy 'nosuch'"));
  CHECK_THROWS_WITH(parse_policy_spec("bfc:bogus=1"), Catch::Contains("unknown key 'bogus'"));
  const PolicySpec bad_value = parse_policy_spec("bfc:frag_fraction=2");
  CHECK_THROWS_WITH(check_policy_spec(bad_value), Catch::Contains("frag_fraction"));
}

TEST_CASE("a row says whose allocator it is; an alias is its row", "[registry]") {
  CHECK(find_policy("prealloc").framework == Framework::tf);
  CHECK(find_policy("growth").framework == Framework::tf);
  CHECK(find_policy("torch").framework == Framework::torch);
  CHECK(find_policy("expandable").framework == Framework::torch);
  CHECK(find_policy("jax-growth").framework == Framework::jax);
  CHECK(find_policy("rmm-limiting").framework == Framework::rmm);
  CHECK(find_policy("torch-async").framework == Framework::cuda);  // CUDA's pool, turned on by PyTorch
  CHECK(find_policy("bestfit").framework == Framework::none);
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
