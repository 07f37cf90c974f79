// parse_policy_spec: a policy spec read into its registry row and checked whole, name, keys
// and values, by the row's one read of its settings, with no device and no policy built.
#include <catch2/catch.hpp>

#include "policies/registry.hpp"
#include "sim/error.hpp"
#include "sim/sim_device.hpp"

namespace allocsim {
namespace {

TEST_CASE("parse_policy_spec accepts every registered policy and its defaults", "[registry]") {
  for (const PolicyInfo& info : all_policies()) {
    INFO(info.name);
    CHECK_NOTHROW(parse_policy_spec(info.name));
  }
  CHECK_NOTHROW(parse_policy_spec("bfc:growth=true"));
  CHECK_NOTHROW(parse_policy_spec("caching:max_split_size=256MiB"));
}

TEST_CASE("parse_policy_spec finds the row by name or alias and checks the keys and values", "[registry]") {
  const PolicySpec torch = parse_policy_spec("torch:max_split_size=256MiB");
  CHECK(torch.row == &find_policy("caching"));
  CHECK(torch.text == "torch:max_split_size=256MiB");
  CHECK(torch.spec == Spec{"torch", {{"max_split_size", "256MiB"}}});
  CHECK_THROWS_WITH(parse_policy_spec("nosuch"), Catch::Contains("unknown policy 'nosuch'"));
  CHECK_THROWS_WITH(parse_policy_spec("bfc:bogus=1"), Catch::Contains("unknown key 'bogus'"));
  CHECK_THROWS_WITH(parse_policy_spec("bfc:frag_fraction=2"), Catch::Contains("frag_fraction"));
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

TEST_CASE("parse_policy_spec names the bad name, key or value", "[registry]") {
  CHECK_THROWS_WITH(parse_policy_spec("nosuch"), Catch::Contains("unknown policy 'nosuch'"));
  CHECK_THROWS_WITH(parse_policy_spec("bfc:bogus=1"), Catch::Contains("unknown key 'bogus'"));
  // Values the policy's constructor once checked, now its row's check.
  CHECK_THROWS_WITH(parse_policy_spec("bfc:frag_fraction=2"), Catch::Contains("frag_fraction"));
  CHECK_THROWS_WITH(parse_policy_spec("bfc:growth=maybe"), Catch::Contains("growth=maybe"));
  CHECK_THROWS_WITH(parse_policy_spec("caching:max_split_size=1MiB"), Catch::Contains("max_split_size"));
  CHECK_THROWS_WITH(parse_policy_spec("buddy:min_block=3"), Catch::Contains("min_block"));
  CHECK_THROWS_AS(parse_policy_spec("bestfit:region"), Error);  // not key=value
}

TEST_CASE("every value a row checks is refused before any policy is built", "[registry]") {
  // A nonsense value for any key of any row: its check reads every key as the policy will.
  for (const PolicyInfo& info : all_policies()) {
    for (const ParamInfo& param : info.params) {
      const std::string spec = std::string(info.name) + ":" + std::string(param.key) + "=zz";
      INFO(spec);
      CHECK_THROWS_AS(parse_policy_spec(spec), Error);
    }
  }
  // Cross-key rules too.
  CHECK_THROWS_WITH(parse_policy_spec("async:prealloc=threshold,release_threshold=max"), Catch::Contains("finite"));
  CHECK_THROWS_WITH(parse_policy_spec("rmm-pool:initial=4MiB,maximum=2MiB"), Catch::Contains("over maximum"));
  CHECK_THROWS_WITH(parse_policy_spec("rmm-binning:min_exp=10"), Catch::Contains("both"));
  CHECK_THROWS_WITH(parse_policy_spec("bestfit:region=1000"), Catch::Contains("multiple of the alignment"));
  CHECK_THROWS_WITH(parse_policy_spec("rmm-pool:upstream=[bestfit:alignment=3]"), Catch::Contains("alignment"));
}

TEST_CASE("a spec its row accepts builds on a device", "[registry]") {
  SimDevice device(DeviceSpec{});
  for (const PolicyInfo& info : all_policies()) {
    INFO(info.name);
    CHECK_NOTHROW(parse_policy_spec(info.name).make(device));
  }
}

}  // namespace
}  // namespace allocsim
