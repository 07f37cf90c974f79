// --workload in every command: one spec per occurrence, never cut at its commas; several
// workloads (sweep) repeat the option; a comma list of workloads is refused, saying so.
// And the zoo's GPT-2 takes the decoder family's tokens (it is one of its presets).
#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "cli_driver.hpp"
#include "studies/csv_resume.hpp"

namespace allocsim {
namespace {

using namespace test;

const std::string kQlora = "llama2_7b_bf16_adamw:qlora=64,ckpt,lora_targets=all";

// The values of a CSV column, by its header name (RFC 4180: a spec with commas is quoted).
std::vector<std::string> column(const std::string& csv, const std::string& name) {
  std::istringstream in(csv);
  std::vector<std::string> header;
  bool complete = false;
  REQUIRE(read_csv_record(in, header, complete));
  const auto at = std::find(header.begin(), header.end(), name);
  REQUIRE(at != header.end());
  std::vector<std::string> values;
  for (std::vector<std::string> cells; read_csv_record(in, cells, complete);) {
    values.push_back(cells.at(static_cast<std::size_t>(at - header.begin())));
  }
  return values;
}

void refused(const std::vector<std::string>& args, const std::string& message) {
  INFO(args.front() << " " << args.at(2));
  const Outcome outcome = cli(args);
  CHECK(outcome.status == 2);
  CHECK(one_line(outcome.err));
  CHECK_THAT(outcome.err, Catch::Contains(message));
}

}  // namespace

TEST_CASE("maxbatch and sweep take a decoder spec with its commas, as run does", "[cli][workload]") {
  // 1 GiB holds no 7B model: each search ends at batch 1, having built and replayed its scenario.
  const Outcome maxbatch = cli({"maxbatch", "--workload", kQlora, "--policy", "caching", "--capacity", "1GiB"});
  INFO(maxbatch.err);
  CHECK(maxbatch.status == 0);
  CHECK_THAT(maxbatch.out, Catch::Contains("workload " + kQlora + " on ") && Catch::Contains("not even batch 1 fits"));

  const Outcome sweep = cli({"sweep", "--workload", kQlora, "--batch", "1", "--policy", "caching", "--capacity", "1GiB", "--quiet"});
  INFO(sweep.err);
  REQUIRE(sweep.status == 0);
  const std::vector<std::string> workloads = column(sweep.out, "workload");
  REQUIRE(workloads.size() == 1);
  CHECK_THAT(workloads.front(), Catch::StartsWith("llama2_7b_bf16_adamw_b1:") && Catch::Contains("ckpt") &&
                                    Catch::Contains("lora_targets=all") && Catch::Contains("qlora=64"));
  CHECK(column(sweep.out, "oom_count") == std::vector<std::string>{"1"});
}

TEST_CASE("sweep: several workloads repeat --workload, rows for each in order", "[cli][workload][sweep]") {
  const Outcome sweep = cli({"sweep", "--workload", "seed_cnn", "--workload", "seed_cnn_dw", "--workload",
                             "random:n=200,live=1MiB", "--policy", "direct", "--capacity", "1GiB", "--quiet"});
  INFO(sweep.err);
  REQUIRE(sweep.status == 0);
  CHECK(column(sweep.out, "workload") == std::vector<std::string>{"seed_cnn", "seed_cnn_dw", "random:n=200,live=1MiB"});
}

TEST_CASE("a comma list of workloads is refused in every command, saying to repeat --workload", "[cli][workload]") {
  const std::string repeat = "is 2 workloads joined by commas; a workload spec is one value, never a list";
  const std::string example = "(--workload seed_cnn --workload seed_cnn_dw)";
  refused({"sweep", "--workload", "seed_cnn,seed_cnn_dw", "--policy", "direct", "--quiet"}, repeat);
  refused({"sweep", "--workload", "seed_cnn,seed_cnn_dw", "--policy", "direct", "--batch", "1,2", "--quiet"}, example);
  refused({"maxbatch", "--workload", "seed_cnn,seed_cnn_dw", "--policy", "direct"}, repeat);
  refused({"run", "--workload", "seed_cnn,seed_cnn_dw", "--policy", "direct"}, example);
  refused({"compare", "--workload", "seed_cnn,seed_cnn_dw", "--policy", "direct"}, repeat);
  refused({"advise", "--workload", "seed_cnn,seed_cnn_dw"}, repeat);
  // The help says how several are given.
  CHECK_THAT(cli({"sweep", "--help"}).out, Catch::Contains("--workload resnet50 --workload bert_base"));
  CHECK_THAT(cli({"--help"}).out, Catch::Contains("repeat --workload, one spec each"));
}

TEST_CASE("the zoo's GPT-2 takes the decoder family's tokens", "[cli][workload][decoder]") {
  // Flash attention keeps no B x heads x S x S scores: the peak falls.
  const auto peak = [](const std::string& workload) {
    const Outcome run = cli({"run", "--workload", workload, "--policy", "caching", "--capacity", "80GiB"});
    INFO(run.err);
    REQUIRE(run.status == 0);
    return run.out;
  };
  TempDir dir;
  const auto peak_allocated = [&](const std::string& workload) {
    const std::string csv = dir.file("run.csv");
    const Outcome run = cli({"run", "--workload", workload, "--policy", "caching", "--capacity", "80GiB", "--csv", csv});
    INFO(run.err);
    REQUIRE(run.status == 0);
    return std::stoull(column(read_file(csv), "peak_allocated_bytes").at(0));
  };
  const auto eager = peak_allocated("gpt2_bf16_adamw_s1024_b2");
  const auto flash = peak_allocated("gpt2_bf16_adamw_s1024_b2:attn=flash");
  CHECK(flash < eager);
  CHECK(peak_allocated("gpt2_bf16_adamw_s1024_b2:attn=eager") == eager);  // the default, spelled
  CHECK(peak_allocated("gpt2_bf16_adamw_s1024_b2:ckpt") < eager);
  CHECK_THAT(peak("gpt2_bf16_adamw_s1024:attn=flash"), Catch::Contains("gpt2_bf16_adamw_s1024:attn=flash"));
  // A token that does not fit GPT-2's configuration is refused, naming why.
  refused({"run", "--workload", "gpt2:kv_heads=4", "--policy", "caching"}, "a fused q, k, v projection has kv_heads = heads");
  refused({"run", "--workload", "gpt2_s2048", "--policy", "caching"}, "positions is 1024");
  // A model that is no decoder still refuses the decoder's tokens.
  refused({"run", "--workload", "bert_base:attn=flash", "--policy", "caching"}, "'attn=flash' is a decoder's; bert_base is not one");
}

}  // namespace allocsim
