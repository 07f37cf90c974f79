// allocsim advise on the seed articles' cases: every line it calls fitting is re-run
// through `allocsim run` (the command line, as a user would check it) and must fit there;
// the limits it finds are the boundaries (one MiB less fails); the ranking follows its rule.
#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "cli_driver.hpp"
#include "sim/device_presets.hpp"
#include "studies/advise.hpp"
#include "studies/scenario_choice.hpp"
#include "workloads/model/model_spec.hpp"

namespace allocsim {
namespace {

using namespace test;

// `allocsim run` of exactly a line's specs on `device`: its JSON, every tenant.
// `device` is the device's options, as advise was given them.
nlohmann::json run_line(const AdviseCandidate& candidate, const std::vector<std::string>& device) {
  TempDir dir;
  const std::string json = dir.file("line.json");
  std::vector<std::string> args{"run", "--workload", candidate.workload.text, "--policy", candidate.policy.text};
  args.insert(args.end(), device.begin(), device.end());
  for (const TenantChoice& tenant : candidate.tenants) {
    args.push_back("--tenant");
    args.push_back(to_string(tenant));  // with its start, as the user gave it
  }
  args.push_back("--json");
  args.push_back(json);
  const Outcome outcome = cli(args);
  REQUIRE(outcome.status == 0);
  return nlohmann::json::parse(read_file(json));
}

bool runs_through(const nlohmann::json& run) {
  for (const auto& tenant : run["tenants"]) {
    if (tenant["oom_count"] != 0 || !tenant["allocator_hang_event"].is_null() ||
        tenant["events_replayed"] != tenant["events"]) {
      return false;
    }
  }
  return true;
}

// Every line the study calls fitting fits when `allocsim run` replays it, with the same peak;
// every line it calls not fitting does not.
void check_every_line_by_run(const AdviseResults& results, const std::vector<std::string>& device) {
  std::vector<const AdviseLine*> lines{&results.as_is};
  for (const AdviseLine& line : results.lines) lines.push_back(&line);
  for (const AdviseLine* line : lines) {
    INFO(line->candidate.what << ": " << line->candidate.workload.text << " @ " << line->candidate.policy.text);
    const nlohmann::json run = run_line(line->candidate, device);
    CHECK(runs_through(run) == line->fits);
    CHECK(run["tenants"][0]["peak_allocated_bytes"] == line->peak_allocated);
    CHECK(run["tenants"][0]["allocator_time_ns"] == line->allocator_time);
    CHECK(run["tenants"][0]["peak_reserved_bytes"] == line->peak_reserved);
  }
}

const AdviseLine* find_line(const AdviseResults& results, std::string_view what) {
  for (const AdviseLine& line : results.lines) {
    if (line.candidate.what.find(what) != std::string::npos) return &line;
  }
  return nullptr;
}

void check_ranked(const AdviseResults& results) {
  for (std::size_t i = 1; i < results.lines.size(); ++i) {
    const AdviseLine& a = results.lines[i - 1];
    const AdviseLine& b = results.lines[i];
    INFO(a.candidate.what << " before " << b.candidate.what);
    CHECK((a.fits || !b.fits));
    if (a.fits == b.fits) CHECK(group_of(a.candidate.impact) <= group_of(b.candidate.impact));
    if (a.fits == b.fits) CHECK(a.candidate.impact <= b.candidate.impact);
    if (a.fits == b.fits && a.candidate.impact == b.candidate.impact) CHECK(a.headroom >= b.headroom);
  }
}

AdviseStudy seed_resnet50() {
  AdviseStudy study;
  study.workload = parse_workload_spec("resnet50_b256");
  study.framework = Framework::tf;
  study.device = device_spec("v100-16gb");
  study.threads = 2;
  return study;
}

TEST_CASE("advise: ResNet-50 at batch 256 on a 16 GB card under TensorFlow's defaults", "[advise]") {
  const AdviseResults results = run_advise(seed_resnet50());
  CHECK(results.workload == "resnet50_tf_b256");  // --framework tf lowers it as TensorFlow runs it
  CHECK_FALSE(results.as_is.fits);
  CHECK_FALSE(results.as_is.verdict.empty());
  check_ranked(results);
  check_every_line_by_run(results, {"--device", "v100-16gb"});

  // The same effective batch by accumulation fits and ranks above halving the batch.
  const AdviseLine* accumulation = find_line(results, "accumulation");
  const AdviseLine* halved = find_line(results, "half the batch");
  REQUIRE(accumulation);
  REQUIRE(halved);
  CHECK(accumulation->fits);
  CHECK(accumulation->candidate.effective_batch == 256);
  CHECK(halved->candidate.effective_batch == 128);
  CHECK(std::find_if(results.lines.begin(), results.lines.end(), [&](const AdviseLine& l) { return &l == accumulation; }) <
        std::find_if(results.lines.begin(), results.lines.end(), [&](const AdviseLine& l) { return &l == halved; }));
  // TensorFlow's spellings, and bf16 left out on a V100.
  const AdviseLine* amp = find_line(results, "amp");
  REQUIRE(amp);
  CHECK(amp->candidate.change == "tf.keras.mixed_precision.set_global_policy('mixed_float16')");
  CHECK(amp->fits);
  const bool bf16_noted = std::any_of(results.not_tried.begin(), results.not_tried.end(),
                                      [](const AdviseNote& note) { return note.what == "bf16 autocast"; });
  CHECK(bf16_noted);
  CHECK_FALSE(find_line(results, "bf16"));
  const bool checkpointing_noted = std::any_of(results.not_tried.begin(), results.not_tried.end(), [](const AdviseNote& note) {
    return note.what.find("checkpointing") != std::string::npos;
  });
  CHECK(checkpointing_noted);
}

TEST_CASE("advise: a limit found by bisection is the boundary: one MiB less does not fit", "[advise]") {
  AdviseStudy study = seed_resnet50();
  study.workload = parse_workload_spec("resnet50_b128");
  const AdviseResults results = run_advise(study);
  CHECK(results.as_is.fits);
  const AdviseLine* limit = find_line(results, "memory_limit");
  REQUIRE(limit);
  REQUIRE(limit->fits);
  CHECK(limit->candidate.policy.text.starts_with("bfc:limit="));
  const std::string mib = limit->candidate.policy.text.substr(std::string("bfc:limit=").size());
  const long value = std::stol(mib);
  CHECK(limit->candidate.change.find("memory_limit=" + std::to_string(value) + ")") != std::string::npos);
  AdviseCandidate less = limit->candidate;
  less.policy = parse_policy_spec("bfc:limit=" + std::to_string(value - 1) + "MiB");
  CHECK_FALSE(runs_through(run_line(less, {"--device", "v100-16gb"})));
  // The limit leaves the rest of the card: more headroom than the preallocating default.
  CHECK(limit->headroom > results.as_is.headroom);
}

TEST_CASE("advise: a second process on a 16 GB card", "[advise]") {
  // This process preallocates under TensorFlow's default; the other, with memory growth,
  // then finds the card taken.
  AdviseStudy study = seed_resnet50();
  study.workload = parse_workload_spec("resnet50_b64");
  study.tenants = {parse_tenant("resnet50_tf_b32@growth")};
  const AdviseResults results = run_advise(study);
  CHECK_FALSE(results.as_is.fits);
  CHECK_FALSE(results.as_is.verdict.empty());
  const nlohmann::json as_is = run_line(results.as_is.candidate, {"--device", "v100-16gb"});
  CHECK(as_is["tenants"][0]["oom_count"] == 0);
  CHECK(as_is["tenants"][1]["first_oom_kind"] == "reservation");  // the card is held, not too small
  check_ranked(results);
  check_every_line_by_run(results, {"--device", "v100-16gb"});
  const AdviseLine* growth = find_line(results, "memory growth");
  REQUIRE(growth);
  CHECK(growth->fits);
  CHECK(growth->candidate.change.starts_with("tf.config.experimental.set_memory_growth(gpu, True)"));
  CHECK(results.lines.front().fits);
  CHECK(results.lines.front().candidate.impact == Impact::setting);
}

TEST_CASE("advise: a second process on a 16 GB card, seen from the one with memory growth", "[advise]") {
  // The second article: the other process preallocates the card under TensorFlow's default
  // after this one, already on memory growth, started.
  AdviseStudy study = seed_resnet50();
  study.workload = parse_workload_spec("resnet50_tf_b32");
  study.policy = parse_policy_spec("growth");
  study.tenants = {parse_tenant("resnet50_tf_b64@bfc")};
  const AdviseResults results = run_advise(study);
  CHECK(results.as_is.candidate.policy.text == "growth");
  CHECK_FALSE(results.as_is.fits);
  const nlohmann::json as_is = run_line(results.as_is.candidate, {"--device", "v100-16gb"});
  CHECK(as_is["tenants"][0]["first_oom_kind"] == "reservation");
  check_ranked(results);
  check_every_line_by_run(results, {"--device", "v100-16gb"});
  for (const AdviseLine& line : results.lines) CHECK(line.candidate.what != "memory growth");  // it has it
  const AdviseLine* other = find_line(results, "memory growth in tenant 1");
  REQUIRE(other);
  CHECK(other->fits);
  CHECK(other->candidate.policy.text == "growth");
  CHECK(other->candidate.tenants.at(0).policy.text == "growth");
  // Its own memory_limit replaces growth: TensorFlow takes one or the other.
  const AdviseLine* limit = find_line(results, "memory_limit, the smallest");
  REQUIRE(limit);
  CHECK(limit->candidate.policy.text.starts_with("bfc:limit="));
  CHECK(limit->candidate.change.starts_with("instead of memory growth, tf.config.set_logical_device_configuration("));
}

TEST_CASE("advise: the other process's limit, a PyTorch job beside a TensorFlow one that preallocates", "[advise]") {
  AdviseStudy study = seed_resnet50();
  study.workload = parse_workload_spec("resnet50_b64");
  study.framework.reset();
  study.tenants = {parse_tenant("resnet50_tf_b64@bfc")};
  const AdviseResults results = run_advise(study);
  CHECK(results.framework == Framework::torch);
  CHECK_FALSE(results.as_is.fits);
  check_ranked(results);
  check_every_line_by_run(results, {"--device", "v100-16gb"});
  const AdviseLine* limit = find_line(results, "memory_limit in tenant 1");
  REQUIRE(limit);
  CHECK(limit->fits);
  CHECK(limit->candidate.policy.text == "caching");  // this process is left as it is
  CHECK(limit->candidate.tenants.at(0).policy.text.starts_with("bfc:limit="));
  CHECK(limit->candidate.change.starts_with("in tenant 1 (resnet50_tf_b64): tf.config.set_logical_device_configuration("));
}

TEST_CASE("advise: an 8 GB card where fragmentation, not capacity, stops PyTorch's default", "[advise]") {
  AdviseStudy study;
  study.workload = parse_workload_spec("vgg16_b84");
  study.device = device_spec("v100-16gb");
  study.device.capacity = 8_GiB;
  study.threads = 2;
  const AdviseResults results = run_advise(study);
  CHECK(results.framework == Framework::torch);  // the workload's own framework: PyTorch when it names none
  const std::vector<std::string> device{"--device", "v100-16gb", "--capacity", "8GiB"};
  const nlohmann::json as_is = run_line(results.as_is.candidate, device);
  CHECK(as_is["tenants"][0]["first_oom_kind"] == "fragmentation");
  check_ranked(results);
  check_every_line_by_run(results, device);
  // A setting fixes it, so a setting ranks first: expandable segments or max_split_size.
  const AdviseLine& best = results.lines.front();
  CHECK(best.fits);
  CHECK(best.candidate.impact == Impact::setting);
  CHECK(best.candidate.workload.text == "vgg16_b84");
  const AdviseLine* expandable = find_line(results, "expandable");
  REQUIRE(expandable);
  CHECK(expandable->candidate.change == "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True");
  CHECK(expandable->candidate.policy.text == "expandable");
  CHECK(expandable->fits);
}

TEST_CASE("advise replaces a setting the program gives in the framework's spelling", "[advise]") {
  // max_split_size_mb=256 is the key max_split_size: advise's 128 MiB takes its place
  // rather than naming it twice (which the spec parser refuses).
  AdviseStudy study;
  study.workload = parse_workload_spec("vgg16_b84");
  study.policy = parse_policy_spec("caching:max_split_size_mb=256");
  study.device = device_spec("v100-16gb");
  study.device.capacity = 8_GiB;
  study.threads = 2;
  const AdviseResults results = run_advise(study);
  CHECK(results.as_is.candidate.policy.text == "caching:max_split_size_mb=256");
  const AdviseLine* split = find_line(results, "max_split_size");
  REQUIRE(split);
  CHECK(split->candidate.policy.text == "caching:max_split_size=128MiB");
}

TEST_CASE("advise: when no single change keeps a training job on the card, two at a time", "[advise]") {
  AdviseStudy study = seed_resnet50();
  study.workload = parse_workload_spec("resnet50_b1024");
  study.framework.reset();
  const AdviseResults results = run_advise(study);
  REQUIRE(results.pairs_tried);
  check_ranked(results);
  check_every_line_by_run(results, {"--device", "v100-16gb"});
  // The best line keeps training and the effective batch: amp with accumulation.
  const AdviseLine& best = results.lines.front();
  CHECK(best.fits);
  CHECK(best.candidate.changes == 2);
  CHECK(best.candidate.impact < Impact::inference);
  CHECK(best.candidate.effective_batch == 1024);
  const auto model = parse_model_spec(best.candidate.workload.text);
  REQUIRE(model);
  CHECK(model->options.precision == Precision::amp);
  CHECK(model->options.accumulation > 1);
  // No pair holds a change that fits alone (inference only does).
  for (const AdviseLine& line : results.lines) {
    if (line.candidate.changes == 2) CHECK(line.candidate.what.find("inference") == std::string::npos);
  }
}

TEST_CASE("advise: checkpointing is suggested only to a run that does not checkpoint yet", "[advise]") {
  const auto mentions_checkpointing = [](const AdviseResults& results) {
    const auto said = [](const std::string& what) { return what.find("checkpointing") != std::string::npos; };
    return std::any_of(results.lines.begin(), results.lines.end(), [&](const AdviseLine& l) { return said(l.candidate.what); }) ||
           std::any_of(results.not_tried.begin(), results.not_tried.end(), [&](const AdviseNote& n) { return said(n.what); });
  };
  AdviseStudy study;
  study.workload = parse_workload_spec("decoder_bf16_adamw_s256_b8:layers=2,d_model=256,heads=4,d_ff=1024,vocab=1000,rope");
  study.device.capacity = 64_MiB;
  study.threads = 2;
  CHECK(mentions_checkpointing(run_advise(study)));
  study.workload = parse_workload_spec(study.workload.text + ",ckpt");
  const AdviseResults checkpointed = run_advise(study);
  CHECK_FALSE(checkpointed.as_is.fits);
  CHECK_FALSE(mentions_checkpointing(checkpointed));
}

TEST_CASE("advise: the ranking puts what fits first, then the least change, then headroom", "[advise]") {
  const auto line = [](std::string what, bool fits, Impact impact, Bytes headroom) {
    AdviseLine l;
    l.candidate.what = std::move(what);
    l.candidate.impact = impact;
    l.fits = fits;
    l.headroom = headroom;
    return l;
  };
  std::vector<AdviseLine> lines{line("a", false, Impact::setting, 9_GiB), line("b", true, Impact::batch, 5_GiB),
                                line("c", true, Impact::setting, 1_GiB), line("d", true, Impact::setting, 2_GiB),
                                line("e", true, Impact::precision, 8_GiB)};
  rank_lines(lines);
  std::string order;
  for (const AdviseLine& l : lines) order += l.candidate.what;
  CHECK(order == "dceba");
}

TEST_CASE("advise: the command line teaches, writes CSV, and refuses what it cannot advise", "[advise][cli]") {
  const Outcome help = cli({"advise", "--help"});
  CHECK(help.status == 0);
  CHECK_THAT(help.out, Catch::Contains("Ranking:") && Catch::Contains("--framework"));

  TempDir dir;
  const std::string csv = dir.file("advice.csv");
  const Outcome advised = cli({"advise", "--workload", "resnet50_b256", "--framework", "tf", "--device", "v100-16gb",
                               "--csv", csv, "-j", "2"});
  REQUIRE(advised.status == 0);
  CHECK_THAT(advised.out, Catch::Contains("as it is (resnet50_tf_b256 @ bfc): does not fit") &&
                              Catch::Contains("What fits, ranked") && Catch::Contains("Not tried:"));
  const std::string written = read_file(csv);
  CHECK(written.starts_with("rank,fits,group,impact,changes,what,change,workload,policy,tenants,device,"
                            "capacity_bytes,effective_batch,"));
  CHECK_THAT(written, Catch::Contains(",keeps_training,") && Catch::Contains(",changes_training,"));
  // ResNet-50 gets none of a decoder's changes; its groups are labelled.
  CHECK_THAT(advised.out, Catch::Contains("Keeps the training the same") && Catch::Contains("Changes the training:"));
  CHECK_THAT(written, !Catch::Contains("LoRA") && !Catch::Contains("ZeRO") && !Catch::Contains("fused"));
  CHECK(std::count(written.begin(), written.end(), '\n') >= 8);

  const Outcome conflict = cli({"advise", "--workload", "resnet50_b256_torch", "--framework", "tf"});
  CHECK(conflict.status == 2);
  CHECK(one_line(conflict.err));
  CHECK_THAT(conflict.err, Catch::Contains("resnet50_b256_torch"));
  const Outcome trace = cli({"advise", "--workload", "random:n=10"});
  CHECK(trace.status == 2);
  CHECK_THAT(trace.err, Catch::Contains("--framework"));
  const Outcome other = cli({"advise", "--workload", "resnet50", "--policy", "bfc"});
  CHECK(other.status == 2);
  CHECK(one_line(other.err));
  CHECK_THAT(other.err, Catch::Contains("--policy bfc") && Catch::Contains("PyTorch"));
  const Outcome word = cli({"advise", "--workload", "resnet50", "--framework", "jax"});
  CHECK(word.status == 2);
  CHECK_THAT(word.err, Catch::Contains("jax"));
  for (const char* ranks : {"0", "-3"}) {
    const Outcome none = cli({"advise", "--workload", "llama2_7b_b4_bf16_adamw", "--device", "a100-80gb",
                              std::string("--ranks=") + ranks, "--csv", dir.file("ranks.csv")});
    CHECK(none.status == 2);
    CHECK(one_line(none.err));
    CHECK_THAT(none.err, Catch::Contains("--ranks " + std::string(ranks)));
  }
  CHECK(dir.entries() == 1);
}

TEST_CASE("docs/advise.md documents every column of advise's CSV", "[advise]") {
  const std::string guide = read_file(ALLOCSIM_DOCS "/advise.md");
  for (const std::string_view name : advise_column_names()) {
    CAPTURE(name);
    CHECK_THAT(guide, Catch::Contains("`" + std::string(name) + "`"));
  }
}

// The groups: everything before precision keeps the training, the rest changes it.
TEST_CASE("advise: the groups and the ranking's group key", "[advise]") {
  for (const Impact impact :
       {Impact::none, Impact::setting, Impact::implementation, Impact::loop, Impact::sharding, Impact::offload}) {
    CHECK(group_of(impact) == Group::keeps_training);
  }
  for (const Impact impact : {Impact::precision, Impact::optimizer, Impact::adapters, Impact::quantized, Impact::batch,
                              Impact::inference}) {
    CHECK(group_of(impact) == Group::changes_training);
  }
  CHECK(name_of(Group::keeps_training) == "keeps_training");
  CHECK(name_of(Group::changes_training) == "changes_training");
  const auto line = [](std::string what, bool fits, Impact impact, Bytes headroom) {
    AdviseLine l;
    l.candidate.what = std::move(what);
    l.candidate.impact = impact;
    l.fits = fits;
    l.headroom = headroom;
    return l;
  };
  // Sharding keeps the training: before another optimizer and LoRA, whatever their headroom.
  std::vector<AdviseLine> lines{line("lora", true, Impact::adapters, 60_GiB), line("sgd", true, Impact::optimizer, 50_GiB),
                                line("zero", true, Impact::sharding, 1_GiB), line("fused", false, Impact::implementation, 0)};
  rank_lines(lines);
  std::string order;
  for (const AdviseLine& l : lines) order += l.candidate.what + " ";
  CHECK(order == "zero sgd lora fused ");
  // LoRA over a base in the compute dtype before QLoRA's 4-bit base, whatever their headroom.
  std::vector<AdviseLine> adapters{line("qlora", true, Impact::quantized, 10_GiB), line("lora", true, Impact::adapters, 1_GiB),
                                   line("half", true, Impact::batch, 20_GiB)};
  rank_lines(adapters);
  order.clear();
  for (const AdviseLine& l : adapters) order += l.candidate.what + " ";
  CHECK(order == "lora qlora half ");
}

const AdviseLine* line_at(const AdviseResults& results, std::string_view what, std::size_t* rank) {
  for (std::size_t i = 0; i < results.lines.size(); ++i) {
    if (results.lines[i].candidate.what == what) {
      *rank = i;
      return &results.lines[i];
    }
  }
  return nullptr;
}

TEST_CASE("advise: Llama 2 7B with AdamW on an 80 GB card, one of 8 ranks", "[advise][llm]") {
  AdviseStudy study;
  study.workload = parse_workload_spec("llama2_7b_b4_bf16_adamw");
  study.device = device_spec("a100-80gb");
  study.ranks = 8;
  study.threads = 2;
  const AdviseResults results = run_advise(study);
  CHECK_FALSE(results.as_is.fits);
  check_ranked(results);
  check_every_line_by_run(results, {"--device", "a100-80gb"});
  // What practitioners reach for, each a line built from the zoo's tokens.
  std::size_t zero3 = 0, fsdp = 0, lora = 0, qlora = 0, fused = 0, eight = 0;
  const AdviseLine* zero3_line = line_at(results, "ZeRO-3 over 8 ranks", &zero3);
  const AdviseLine* fsdp_line = line_at(results, "FSDP over 8 ranks", &fsdp);
  const AdviseLine* lora_line = line_at(results, "LoRA r=16 on q_proj and v_proj", &lora);
  const AdviseLine* qlora_line = line_at(results, "QLoRA r=16 on every linear, a 4-bit NF4 base", &qlora);
  const AdviseLine* fused_line = line_at(results, "fused AdamW", &fused);
  const AdviseLine* eight_line = line_at(results, "8-bit AdamW", &eight);
  REQUIRE(zero3_line);
  REQUIRE(fsdp_line);
  REQUIRE(lora_line);
  REQUIRE(qlora_line);
  REQUIRE(fused_line);
  REQUIRE(eight_line);
  CHECK(zero3_line->candidate.workload.text == "llama2_7b_bf16_adamw_b4:zero=3,world=8");
  CHECK(fsdp_line->candidate.workload.text == "llama2_7b_bf16_adamw_b4:fsdp=8");
  CHECK(lora_line->candidate.workload.text == "llama2_7b_bf16_adamw_b4:lora=16");
  CHECK(qlora_line->candidate.workload.text == "llama2_7b_bf16_adamw_b4:lora_targets=all,qlora=16");
  CHECK(fused_line->candidate.workload.text == "llama2_7b_bf16_adamw_fused_b4");
  CHECK(eight_line->candidate.workload.text == "llama2_7b_bf16_adamw8bit_b4");
  CHECK(group_of(zero3_line->candidate.impact) == Group::keeps_training);
  CHECK(group_of(fused_line->candidate.impact) == Group::keeps_training);
  CHECK(group_of(eight_line->candidate.impact) == Group::changes_training);
  CHECK(group_of(lora_line->candidate.impact) == Group::changes_training);
  // Sharding over the 8 ranks fits and keeps the training: it ranks before LoRA, which fits too.
  REQUIRE(zero3_line->fits);
  REQUIRE(lora_line->fits);
  CHECK(zero3 < lora);
  CHECK(zero3_line->candidate.effective_batch == 4);
  CHECK(group_of(results.lines.front().candidate.impact) == Group::keeps_training);
  CHECK(results.lines.front().fits);
  CHECK_FALSE(results.pairs_tried);  // a single change keeps the training
  // Lower precision than bf16 autocast is not in the token table: a note, not a line.
  const bool master_noted = std::any_of(results.not_tried.begin(), results.not_tried.end(), [](const AdviseNote& note) {
    return note.what.find("master weights") != std::string::npos;
  });
  CHECK(master_noted);
}

TEST_CASE("advise: Llama 2 7B on one 80 GB card: no SGD first, sharding only with --ranks", "[advise][llm]") {
  AdviseStudy study;
  study.workload = parse_workload_spec("llama2_7b_b4_bf16_adamw");
  study.device = device_spec("a100-80gb");
  study.threads = 2;
  const AdviseResults results = run_advise(study);
  check_ranked(results);
  REQUIRE_FALSE(results.lines.empty());
  const AdviseLine& best = results.lines.front();
  CHECK(best.fits);
  CHECK(best.candidate.what.find("SGD") == std::string::npos);
  CHECK_FALSE(find_line(results, "ZeRO"));
  CHECK_FALSE(find_line(results, "FSDP"));
  const bool ranks_noted = std::any_of(results.not_tried.begin(), results.not_tried.end(), [](const AdviseNote& note) {
    return note.what == "ZeRO-1/2/3 and FSDP" && note.why.find("--ranks") != std::string::npos;
  });
  CHECK(ranks_noted);
  // Among what fits, every change that keeps the training ranks before every one that changes it.
  bool changed = false;
  for (const AdviseLine& line : results.lines) {
    if (!line.fits) break;
    if (group_of(line.candidate.impact) == Group::changes_training) changed = true;
    if (changed) CHECK(group_of(line.candidate.impact) == Group::changes_training);
  }
  // 8-bit and paged state, LoRA and QLoRA are tried.
  CHECK(find_line(results, "paged 8-bit AdamW"));
  CHECK(find_line(results, "paged AdamW (32-bit state)"));
  CHECK(find_line(results, "QLoRA"));
}

TEST_CASE("advise: what the zoo does not lower is a note, not a line", "[advise][llm]") {
  const auto noted = [](const AdviseResults& results, std::string_view what, std::string_view why) {
    return std::any_of(results.not_tried.begin(), results.not_tried.end(), [&](const AdviseNote& note) {
      return note.what == what && note.why.find(why) != std::string::npos;
    });
  };
  // A job that shards with ZeRO-1 over its own 4 ranks: the higher stages, over its world;
  // LoRA with ZeRO is not modelled, so the LoRA changes are notes with the zoo's reason.
  AdviseStudy study;
  const std::string decoder = "decoder_bf16_adamw_s256_b8:layers=2,d_model=256,heads=4,d_ff=1024,vocab=1000,rope";
  study.workload = parse_workload_spec(decoder + ",zero=1,world=4");
  study.device.capacity = 64_MiB;
  study.threads = 2;
  const AdviseResults sharded = run_advise(study);
  check_ranked(sharded);
  CHECK(find_line(sharded, "ZeRO-2 over 4 ranks"));
  CHECK(find_line(sharded, "ZeRO-3 over 4 ranks"));
  CHECK_FALSE(find_line(sharded, "ZeRO-1"));
  CHECK_FALSE(find_line(sharded, "FSDP"));
  CHECK_FALSE(find_line(sharded, "LoRA"));
  CHECK(noted(sharded, "LoRA r=16 on q_proj and v_proj", "not modelled: "));
  CHECK(noted(sharded, "QLoRA r=16 on every linear, a 4-bit NF4 base", "not modelled: "));

  // A LoRA job: no sharding (a note), and QLoRA keeps its rank and quantises the base.
  study.workload = parse_workload_spec(decoder + ",lora=8");
  study.ranks = 4;
  const AdviseResults lora = run_advise(study);
  CHECK_FALSE(find_line(lora, "ZeRO"));
  CHECK(noted(lora, "ZeRO-1/2/3 and FSDP", "not modelled with LoRA"));
  const AdviseLine* qlora = find_line(lora, "QLoRA");
  REQUIRE(qlora);
  const auto spec = parse_model_spec(qlora->candidate.workload.text);
  REQUIRE(spec);
  CHECK(spec->decoder.nf4);
  CHECK(spec->decoder.lora == 8);
  CHECK(qlora->candidate.workload.text.ends_with(",qlora=8"));

  // A DistributedDataParallel job: ZeRO and FSDP take DDP's place.
  study.workload = parse_workload_spec("decoder_bf16_adamw_ddp_s256_b8:layers=2,d_model=256,heads=4,d_ff=1024,vocab=1000,rope");
  const AdviseResults ddp = run_advise(study);
  const AdviseLine* zero1 = find_line(ddp, "ZeRO-1 over 4 ranks");
  REQUIRE(zero1);
  CHECK(zero1->candidate.workload.text == "decoder_bf16_adamw_s256_b8:layers=2,d_model=256,heads=4,d_ff=1024,vocab=1000,"
                                     "rope,zero=1,world=4");
  CHECK_THAT(zero1->candidate.change, Catch::Contains("in place of DistributedDataParallel"));
  REQUIRE(find_line(ddp, "FSDP over 4 ranks"));
  CHECK(find_line(ddp, "FSDP over 4 ranks")->candidate.workload.text.find("ddp") == std::string::npos);
}

TEST_CASE("advise: a generation is offered a paged KV cache, which keeps its results", "[advise][llm]") {
  AdviseStudy study;
  study.workload = parse_workload_spec("decoder_bf16_infer_prefill64_decode32_b4:layers=2,d_model=256,heads=4,d_ff=1024,vocab=1000,rope");
  study.device.capacity = 64_MiB;
  study.threads = 2;
  const AdviseResults results = run_advise(study);
  CHECK_FALSE(results.training);
  const AdviseLine* paged = find_line(results, "a paged KV cache");
  REQUIRE(paged);
  CHECK(paged->candidate.workload.text.find("cache=paged") != std::string::npos);
  CHECK(group_of(paged->candidate.impact) == Group::keeps_training);
  CHECK_FALSE(find_line(results, "LoRA"));
  CHECK_FALSE(find_line(results, "AdamW"));
}

}  // namespace
// ---- several processes: each kept as given, and the change in every one at once --------

// The line whose change is `what` itself (with, for a search, which end it is after a comma).
const AdviseLine* exact_line(const AdviseResults& results, std::string_view what) {
  for (const AdviseLine& line : results.lines) {
    const std::string& w = line.candidate.what;
    if (w == what || (w.starts_with(what) && w.substr(what.size()).starts_with(","))) return &line;
  }
  return nullptr;
}

std::vector<const AdviseLine*> every_line(const AdviseResults& results) {
  std::vector<const AdviseLine*> lines{&results.as_is};
  for (const AdviseLine& line : results.lines) lines.push_back(&line);
  return lines;
}

// The case: a TensorFlow job with a BERT process that starts a second after it.
AdviseStudy tf_job_and_late_bert() {
  AdviseStudy study;
  study.workload = parse_workload_spec("resnet50_tf_b32");
  study.framework = Framework::tf;
  study.device = device_spec("v100-16gb");
  study.tenants = {parse_tenant("bert_base_tf_b16@bfc@start=1s")};
  study.threads = 2;
  return study;
}

TEST_CASE("advise keeps every tenant as given: its start and policy, in what it prints and replays", "[advise][tenant]") {
  const AdviseResults results = run_advise(tf_job_and_late_bert());
  for (const AdviseLine* line : every_line(results)) {
    INFO(line->candidate.what);
    REQUIRE(line->candidate.tenants.size() == 1);
    const TenantChoice& tenant = line->candidate.tenants.front();
    CHECK(tenant.start == 1'000'000'000);
    CHECK(tenant.workload.text == "bert_base_tf_b16");
    // Only a change made in that process changes its policy.
    const bool in_tenant = line->candidate.change.find("tenant 1") != std::string::npos;
    if (!in_tenant) CHECK(tenant.policy.text == "bfc");
  }
  // Each line is what `allocsim run` of its specs, the start included, gives.
  check_every_line_by_run(results, {"--device", "v100-16gb"});
  // Memory growth in this process alone: the line's run is the issue's
  // `allocsim run --tenant resnet50_tf_b32@growth --tenant bert_base_tf_b16@bfc@start=1s`.
  const AdviseLine* growth = exact_line(results, "memory growth");
  REQUIRE(growth);
  CHECK(growth->candidate.policy.text == "growth");
  CHECK(growth->candidate.tenants.front().policy.text == "bfc");
  const nlohmann::json by_hand = run_line(AdviseCandidate{"", "", Impact::setting, parse_workload_spec("resnet50_tf_b32"),
                                                          parse_policy_spec("growth"),
                                                          {parse_tenant("bert_base_tf_b16@bfc@start=1s")}},
                                          {"--device", "v100-16gb"});
  CHECK(runs_through(by_hand) == growth->fits);
  // The CSV and the terminal spell the tenant as --tenant takes it.
  std::ostringstream csv;
  write_advise_csv(csv, results);
  CHECK_THAT(csv.str(), Catch::Contains("bert_base_tf_b16@bfc@start=1s"));
  const Outcome printed = cli({"advise", "--workload", "resnet50_tf_b32", "--framework", "tf", "--device", "v100-16gb",
                               "--tenant", "bert_base_tf_b16@bfc@start=1s", "-j", "2"});
  REQUIRE(printed.status == 0);
  CHECK_THAT(printed.out, Catch::Contains("resnet50_tf_b32 @ bfc + bert_base_tf_b16@bfc@start=1s"));
}

TEST_CASE("advise tries each change in every process at once, and finds all-growth where it fits", "[advise][tenant]") {
  // Three TensorFlow processes under the default BFC, the second and third a moment later.
  AdviseStudy study = tf_job_and_late_bert();
  study.tenants = {parse_tenant("bert_base_tf_b16@bfc@start=1ms"), parse_tenant("resnet50_tf_b16@bfc@start=2ms")};
  const DeviceSpec& device = study.device;
  // Memory growth in every process fits on this card: checked by a run of its own.
  const nlohmann::json all_growth =
      run_line(AdviseCandidate{"", "", Impact::setting, parse_workload_spec("resnet50_tf_b32"), parse_policy_spec("growth"),
                               {parse_tenant("bert_base_tf_b16@growth@start=1ms"),
                                parse_tenant("resnet50_tf_b16@growth@start=2ms")}},
               {"--device", "v100-16gb"});
  REQUIRE(runs_through(all_growth));

  const AdviseResults results = run_advise(study);
  check_ranked(results);
  check_every_line_by_run(results, {"--device", "v100-16gb"});
  // Growth in all three: found, and it fits.
  const AdviseLine* growth = exact_line(results, "memory growth in every process");
  REQUIRE(growth);
  CHECK(growth->fits);
  CHECK(growth->candidate.policy.text == "growth");
  for (const TenantChoice& tenant : growth->candidate.tenants) CHECK(tenant.policy.text == "growth");
  CHECK(growth->candidate.tenants.at(0).start == 1'000'000);  // the starts as given
  CHECK(growth->candidate.tenants.at(1).start == 2'000'000);
  CHECK_THAT(growth->candidate.change, Catch::Contains("the workload, tenant 1 and tenant 2"));
  REQUIRE(results.lines.front().fits);  // not "nothing tried fits"

  // cuda_malloc_async in all three.
  const AdviseLine* async = exact_line(results, "cuda_malloc_async in every process");
  REQUIRE(async);
  CHECK(async->candidate.policy.text == "tf-async");
  for (const TenantChoice& tenant : async->candidate.tenants) CHECK(tenant.policy.text == "tf-async");
  CHECK_THAT(async->candidate.change, Catch::StartsWith("TF_GPU_ALLOCATOR=cuda_malloc_async"));

  // A memory limit per process: each the smallest with which that process runs alone (one
  // MiB less does not), and where the line fits, the limits and a context each are within
  // the card.
  const AdviseLine* limits = exact_line(results, "a memory limit per process");
  REQUIRE(limits);
  std::vector<PolicySpec> policies{limits->candidate.policy};
  std::vector<WorkloadSpec> workloads{limits->candidate.workload};
  for (const TenantChoice& tenant : limits->candidate.tenants) {
    policies.push_back(tenant.policy);
    workloads.push_back(tenant.workload);
  }
  Bytes sum = 0;
  for (std::size_t p = 0; p < policies.size(); ++p) {
    INFO("process " << p << ": " << policies[p].text);
    REQUIRE(policies[p].text.starts_with("bfc:limit="));
    const std::string value = policies[p].text.substr(std::string("bfc:limit=").size());
    REQUIRE(value.ends_with("MiB"));
    const long mib = std::stol(value);
    sum += static_cast<Bytes>(mib) * 1_MiB;
    CHECK_THAT(limits->candidate.change, Catch::Contains("memory_limit=" + std::to_string(mib) + ")"));
    const auto alone = [&](long limit) {
      return runs_through(run_line(AdviseCandidate{"", "", Impact::setting, workloads[p],
                                                   parse_policy_spec("bfc:limit=" + std::to_string(limit) + "MiB"), {}},
                                   {"--device", "v100-16gb"}));
    };
    CHECK(alone(mib));
    CHECK_FALSE(alone(mib - 1));
  }
  if (limits->fits) CHECK(sum + 3 * device.context_overhead <= device.capacity);
  if (sum + 3 * device.context_overhead > device.capacity) CHECK_FALSE(limits->fits);
}

TEST_CASE("advise: a memory limit per process across frameworks, a fraction for PyTorch", "[advise][tenant]") {
  AdviseStudy study = seed_resnet50();
  study.workload = parse_workload_spec("resnet50_b64");
  study.framework.reset();
  study.tenants = {parse_tenant("resnet50_tf_b64@bfc@start=1ms")};
  const AdviseResults results = run_advise(study);
  const AdviseLine* limits = exact_line(results, "a memory limit per process");
  REQUIRE(limits);
  CHECK(limits->candidate.policy.text.starts_with("caching:fraction="));
  CHECK(limits->candidate.tenants.at(0).policy.text.starts_with("bfc:limit="));
  CHECK(limits->candidate.tenants.at(0).start == 1'000'000);
  CHECK_THAT(limits->candidate.change, Catch::StartsWith("in the workload: torch.cuda.set_per_process_memory_fraction(") &&
                                           Catch::Contains("; in tenant 1: tf.config.set_logical_device_configuration("));
  // One TensorFlow process: growth and cuda_malloc_async in every process would be tenant 1's
  // own change, not offered twice.
  CHECK_FALSE(exact_line(results, "memory growth in every process"));
  CHECK_FALSE(exact_line(results, "cuda_malloc_async in every process"));
  check_every_line_by_run(results, {"--device", "v100-16gb"});
}

TEST_CASE("advise: a bf16 7B finetune on a 24 GB card finds bf16 LoRA before QLoRA", "[advise][llm]") {
  // The frozen base in bf16 (2 bytes a parameter: 12.6 GiB for Llama 2 7B) leaves room on a
  // 24 GB card for LoRA; QLoRA's 4-bit base is the further step, ranked after it.
  AdviseStudy study;
  study.workload = parse_workload_spec("llama2_7b_bf16_adamw_s512_b1");
  study.device = device_spec("rtx3090");
  study.threads = 2;
  const AdviseResults results = run_advise(study);
  CHECK_FALSE(results.as_is.fits);
  check_ranked(results);
  std::size_t lora = 0, qlora = 0;
  const AdviseLine* lora_line = line_at(results, "LoRA r=16 on q_proj and v_proj", &lora);
  const AdviseLine* qlora_line = line_at(results, "QLoRA r=16 on every linear, a 4-bit NF4 base", &qlora);
  REQUIRE(lora_line);
  REQUIRE(qlora_line);
  CHECK(lora_line->candidate.workload.text == "llama2_7b_bf16_adamw_s512_b1:lora=16");
  CHECK(lora_line->candidate.impact == Impact::adapters);
  CHECK(qlora_line->candidate.impact == Impact::quantized);
  CHECK_THAT(lora_line->candidate.change, Catch::Contains("torch_dtype=torch.bfloat16"));
  CHECK(lora_line->fits);
  CHECK(lora < qlora);
  // The line holds the base's bf16 weights (2 bytes a parameter), not fp32's 4.
  CHECK(lora_line->peak_allocated > Bytes{6'738'415'616} * 2);
  CHECK(lora_line->peak_allocated < Bytes{6'738'415'616} * 4);
}

}  // namespace allocsim
