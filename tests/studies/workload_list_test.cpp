// --workload lists (split_workload_list): a decoder's flags after its ':' stay in its spec.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "studies/sweep_grid.hpp"

namespace allocsim {

TEST_CASE("a workload list keeps a decoder's flags in its spec", "[sweep]") {
  using List = std::vector<std::string>;
  CHECK(split_workload_list("llama3_8b_bf16:qlora=16,ckpt") == List{"llama3_8b_bf16:qlora=16,ckpt"});
  CHECK(split_workload_list("tinyllama_1b:lora=16,ckpt,rope,gpt2_b4,random:n=10,live=1MiB") ==
        List{"tinyllama_1b:lora=16,ckpt,rope", "gpt2_b4", "random:n=10,live=1MiB"});
  CHECK(split_workload_list("resnet50,bert_base") == List{"resnet50", "bert_base"});
  // A word that is no token of the spec before stays an item of its own (and fails where it is loaded).
  CHECK(split_workload_list("tinyllama_1b:lora=16,bogus") == List{"tinyllama_1b:lora=16", "bogus"});
}

}  // namespace allocsim
