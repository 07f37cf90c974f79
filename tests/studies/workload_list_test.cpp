// A workload spec is one value: each --workload is one spec, its commas its own, and several
// workloads repeat the option (expand_sweep, refuse_workload_list).
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "cli_driver.hpp"
#include "sim/error.hpp"
#include "studies/sweep_grid.hpp"
#include "workloads/catalogue.hpp"

namespace allocsim {
namespace {

using test::TempDir;

std::vector<std::string> swept(std::vector<std::string> workloads) {
  SweepOptions options;
  options.workloads = std::move(workloads);
  options.policies = {"caching"};
  std::vector<std::string> specs;
  for (const SweepPoint& point : expand_sweep(options)) specs.push_back(point.workload);
  return specs;
}

}  // namespace

TEST_CASE("a --workload is one spec: its commas are its own", "[sweep][workload]") {
  using List = std::vector<std::string>;
  const std::string qlora = "llama2_7b_bf16_adamw:qlora=64,ckpt,lora_targets=all";
  CHECK(swept({qlora}) == List{qlora});
  CHECK(swept({"tinyllama_1b:lora=16,ckpt,rope"}) == List{"tinyllama_1b:lora=16,ckpt,rope"});
  CHECK(swept({"random:n=10,live=1MiB"}) == List{"random:n=10,live=1MiB"});
  // Several workloads: the option repeated, in the order given.
  CHECK(swept({"seed_cnn", qlora, "random:n=10,live=1MiB"}) == List{"seed_cnn", qlora, "random:n=10,live=1MiB"});
  for (const std::string spec : {"llama2_7b_bf16_adamw:qlora=64,ckpt,lora_targets=all", "random:n=10,seed=7",
                                 "caching_is_no_workload", "decoder:layers=2,d_model=64,heads=2,d_ff=8,vocab=8,rope"}) {
    CHECK_NOTHROW(refuse_workload_list(spec));
  }
}

TEST_CASE("a comma list of workloads is refused, saying to repeat --workload", "[sweep][workload]") {
  CHECK_THROWS_WITH(swept({"resnet50,bert_base"}),
                    Catch::Contains("'resnet50,bert_base' is 2 workloads joined by commas") &&
                        Catch::Contains("a workload spec is one value") &&
                        Catch::Contains("(--workload resnet50 --workload bert_base)"));
  // A decoder's flags stay with it; the next model starts the next workload.
  CHECK_THROWS_WITH(refuse_workload_list("tinyllama_1b:lora=16,ckpt,rope,gpt2_b4,random:n=10,live=1MiB"),
                    Catch::Contains("is 3 workloads") &&
                        Catch::Contains("--workload tinyllama_1b:lora=16,ckpt,rope --workload gpt2_b4 --workload "
                                        "random:n=10,live=1MiB"));
  // A --tenant's workload too (the sweep checks every co-tenant).
  SweepOptions options;
  options.workloads = {"seed_cnn"};
  options.policies = {"caching"};
  options.tenants = {"seed_cnn,seed_cnn_dw@bfc"};
  CHECK_THROWS_WITH(expand_sweep(options), Catch::Contains("is 2 workloads joined by commas"));
  // load_workload refuses it as well, whichever command calls it.
  CHECK_THROWS_WITH(load_workload("seed_cnn_b1,seed_cnn_dw_b1"), Catch::Contains("a workload spec is one value"));
}

TEST_CASE("trace files joined by a comma are a list; a missing path with a comma is just missing", "[workload]") {
  TempDir dir;
  const std::string a = dir.file("a.csv", "time_ns,op,id,bytes,stream,tag\n");
  const std::string b = dir.file("b.csv", "time_ns,op,id,bytes,stream,tag\n");
  CHECK_THROWS_WITH(refuse_workload_list(a + "," + b), Catch::Contains("is 2 workloads joined by commas"));
  CHECK_NOTHROW(refuse_workload_list(dir.file("run,1.csv")));  // no such file: its reader says so
  const std::string comma = dir.file("run,2.csv", "time_ns,op,id,bytes,stream,tag\n");
  CHECK_NOTHROW(refuse_workload_list(comma));  // a file of that name is one workload
}

}  // namespace allocsim
