// --alloc-conf: PYTORCH_CUDA_ALLOC_CONF in PyTorch's words, read into the policy spec that
// models it; PyTorch's spellings given to --policy are refused with both right spellings.
#include <catch2/catch.hpp>

#include "policies/registry.hpp"
#include "policies/torch_alloc_conf.hpp"
#include "sim/error.hpp"
#include "sim/spec.hpp"

namespace allocsim {
namespace {

using Catch::Contains;

TEST_CASE("alloc-conf: PyTorch's settings become the caching family's spec", "[alloc-conf]") {
  const AllocConfPolicy all = alloc_conf_policy(
      "expandable_segments:True,max_split_size_mb:128,garbage_collection_threshold:0.8,roundup_power2_divisions:4");
  CHECK(all.policy.text == "expandable:max_split_size=128MiB,gc_threshold=0.8,roundup_power2_divisions=4");
  REQUIRE(all.warnings.size() == 1);  // no fraction: PyTorch never collects
  CHECK_THAT(all.warnings[0], Contains("garbage_collection_threshold has no effect without a memory fraction"));

  const AllocConfPolicy capped = alloc_conf_policy("garbage_collection_threshold:0.6, per_process_memory_fraction:0.9");
  CHECK(capped.policy.text == "caching:gc_threshold=0.6,fraction=0.9");
  CHECK(capped.warnings.empty());

  // A list keeps its commas; keys without effect on device memory are accepted.
  CHECK(alloc_conf_policy("roundup_power2_divisions:[256:1,512:2,>:4],release_lock_on_cudamalloc:True").policy.text ==
        "caching:roundup_power2_divisions=[256:1,512:2,>:4]");
  CHECK(alloc_conf_policy("expandable_segments:False,backend:native").policy.text == "caching");
  CHECK(alloc_conf_policy("").policy.text == "caching");

  // cudaMallocAsync reads the fraction alone; PyTorch warns that it ignores the rest.
  const AllocConfPolicy async = alloc_conf_policy("backend:cudaMallocAsync,max_split_size_mb:64,per_process_memory_fraction:0.5");
  CHECK(async.policy.text == "torch-async:fraction=0.5");
  REQUIRE(async.warnings.size() == 1);
  CHECK_THAT(async.warnings[0], Contains("max_split_size_mb:64 has no effect under backend:cudaMallocAsync"));
}

TEST_CASE("alloc-conf: the table reads both ways: a spec back to what a user sets", "[alloc-conf]") {
  // Each key of the caching family, read into a spec and back, is the conf a user wrote.
  for (const std::string conf : {"max_split_size_mb:128", "max_non_split_rounding_mb:40",
                                 "garbage_collection_threshold:0.6", "roundup_power2_divisions:[256:1,512:2,>:4]",
                                 "expandable_segments:True", "backend:cudaMallocAsync",
                                 "expandable_segments:True,max_split_size_mb:64"}) {
    INFO(conf);
    const std::optional<std::string> line = alloc_conf_line(alloc_conf_policy(conf).policy.spec, "");
    REQUIRE(line);
    CHECK(*line == "PYTORCH_CUDA_ALLOC_CONF=" + conf);
  }
  // Each caching parameter with a key has it as its registry row's own spelling.
  CHECK(alloc_conf_key("max_split_size") == "max_split_size_mb");
  CHECK(alloc_conf_key("gc_threshold") == "garbage_collection_threshold");
  CHECK(alloc_conf_key("conf").empty());

  // The recorded setting's other keys stay; the key the spec sets is replaced in its place.
  CHECK(alloc_conf_line(parse_spec("caching:max_split_size=256MiB"), "max_split_size_mb:64,release_lock_on_cudamalloc:True") ==
        "PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:256,release_lock_on_cudamalloc:True");
  CHECK(alloc_conf_line(parse_spec("expandable"), "max_split_size_mb:64") ==
        "PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:64,expandable_segments:True");
  // No PyTorch spelling: a size that is no whole number of MB, a policy that is not PyTorch's.
  CHECK_FALSE(alloc_conf_line(parse_spec("caching:max_split_size=100000000"), ""));
  CHECK_FALSE(alloc_conf_line(parse_spec("bfc"), ""));

  // What a person is told: the fraction is a Python call; plain caching keeps the recorded setting.
  CHECK(torch_setting(parse_spec("caching:gc_threshold=0.8,fraction=0.95"), "") ==
        "PYTORCH_CUDA_ALLOC_CONF=garbage_collection_threshold:0.8\n# and in Python, before the first allocation:\n"
        "torch.cuda.set_per_process_memory_fraction(0.95)");
  CHECK(torch_setting(parse_spec("torch"), "expandable_segments:False") ==
        "# the recorded settings: keep it as it was\nPYTORCH_CUDA_ALLOC_CONF=expandable_segments:False");
  CHECK(torch_setting(parse_spec("caching"), "") == "# the recorded settings: keep PYTORCH_CUDA_ALLOC_CONF as it was");
  CHECK(torch_setting(parse_spec("bfc:growth=true"), "") == "# bfc:growth=true");
}

TEST_CASE("alloc-conf: what PyTorch refuses is refused, in our words", "[alloc-conf]") {
  CHECK_THROWS_WITH(alloc_conf_policy("expandable_segment:True"),
                    Contains("'expandable_segment' is not a key of PYTORCH_CUDA_ALLOC_CONF") && Contains("expandable_segments"));
  CHECK_THROWS_WITH(alloc_conf_policy("expandable_segments:true"), Contains("PyTorch takes True or False"));
  CHECK_THROWS_WITH(alloc_conf_policy("max_split_size_mb:19"), Contains("20 or more"));
  CHECK_THROWS_WITH(alloc_conf_policy("max_split_size_mb:128MB"), Contains("whole number of MB"));
  CHECK_THROWS_WITH(alloc_conf_policy("garbage_collection_threshold:1"), Contains("between 0 and 1"));
  CHECK_THROWS_WITH(alloc_conf_policy("garbage_collection_threshold:0"), Contains("between 0 and 1"));
  CHECK_THROWS_WITH(alloc_conf_policy("garbage_collection_threshold:x"), Contains("gc_threshold"));
  CHECK_THROWS_WITH(alloc_conf_policy("backend:async"), Contains("backend:native or backend:cudaMallocAsync"));
  CHECK_THROWS_WITH(alloc_conf_policy("per_process_memory_fraction:1.5"), Contains("fraction"));
  CHECK_THROWS_WITH(alloc_conf_policy("roundup_power2_divisions:3"), Contains("power of two"));
  CHECK_THROWS_WITH(alloc_conf_policy("max_split_size_mb"), Contains("has no value"));
}

TEST_CASE("alloc-conf: PyTorch's spellings and framework names given to --policy show the right spelling", "[alloc-conf]") {
  CHECK_THROWS_WITH(parse_policy_spec("expandable_segments:True"),
                    Contains("--alloc-conf expandable_segments:True") && Contains("--policy expandable"));
  CHECK_THROWS_WITH(parse_policy_spec("max_split_size_mb:128"),
                    Contains("--alloc-conf max_split_size_mb:128") && Contains("--policy caching:max_split_size_mb=128"));
  CHECK_THROWS_WITH(parse_policy_spec("caching:garbage_collection_threshold:0.8"),
                    Contains("--alloc-conf garbage_collection_threshold:0.8"));
  CHECK_THROWS_WITH(parse_policy_spec("pytorch"), Contains("did you mean caching"));
  CHECK_THROWS_WITH(parse_policy_spec("TensorFlow"), Contains("did you mean bfc"));
  // PyTorch's conf inside our own spec stays ours.
  CHECK_NOTHROW(parse_policy_spec("caching:conf=max_split_size_mb:128"));
  CHECK_NOTHROW(parse_policy_spec("caching:roundup_power2_divisions=[256:1,>:4]"));
}

TEST_CASE("policy lists: `all` is every row, each item checked", "[alloc-conf][registry]") {
  const std::vector<std::string> lists{"caching:max_split_size=64MiB,bfc", "all"};
  const std::vector<PolicySpec> policies = parse_policy_lists(lists);
  REQUIRE(policies.size() == 2 + all_policies().size());
  CHECK(policies[0].text == "caching:max_split_size=64MiB");
  CHECK(policies[1].row == &find_policy("bfc"));
  CHECK(policies.back().row == &all_policies().back());
  CHECK_THROWS_WITH(parse_policy_lists(std::vector<std::string>{"bfc,nosuch"}), Contains("unknown policy 'nosuch'"));
}

}  // namespace
}  // namespace allocsim
