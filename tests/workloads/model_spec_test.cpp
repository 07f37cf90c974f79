// The model spec's token table: it drives the parser, the help line and the printing, and
// to_string is parse's inverse with one canonical spelling.
#include <set>
#include <string>

#include <catch2/catch.hpp>

#include "sim/error.hpp"
#include "workloads/model/model_spec.hpp"

namespace allocsim {
namespace {

TEST_CASE("model spec: to_string inverts parse and spells the keys in one order", "[model_spec]") {
  // Canonical already: the sweep's own spellings (results/*.csv) and the usual ones.
  for (const char* text : {"resnet50", "resnet50_b64", "resnet50_amp_b1024", "resnet50_fp32_b3", "bert_base_amp_s128_b32",
                           "seed_cnn_fp32_b1", "seed_cnn_dw_amp_b16", "resnet50_amp_adam_acc4_steps2_infer_b64",
                           "gpt2_s1024_acc4_b4", "resnet50_bf16_adamw_fused_keepgrad_nows_tf_b8", "resnet50_torch"}) {
    INFO(text);
    const auto spec = parse_model_spec(text);
    REQUIRE(spec);
    CHECK(to_string(*spec) == text);
    CHECK(*parse_model_spec(to_string(*spec)) == *spec);
  }
  // Other spellings print canonically: keys in ModelKey order, amp for fp16.
  CHECK(to_string(*parse_model_spec("gpt2_s1024_b4_acc4")) == "gpt2_s1024_acc4_b4");
  CHECK(to_string(*parse_model_spec("resnet50_fp16")) == "resnet50_amp");
  CHECK(to_string(*parse_model_spec("resnet50_b64_amp_adam_acc4_steps2_infer_nows_keepgrad_fused")) ==
        "resnet50_amp_adam_acc4_steps2_infer_fused_keepgrad_nows_b64");
  // Issue 14: two tokens of one key conflict, and say which (they were "the last one wins").
  CHECK_THROWS_WITH(parse_model_spec("resnet50_b64_b128"),
                    "workload resnet50_b64_b128: 'b64' and 'b128' both set the batch; give one");
  CHECK_THROWS_WITH(parse_model_spec("resnet50_amp_fp32"), Catch::Contains("'amp' and 'fp32' both set the precision"));
  CHECK_THROWS_WITH(parse_model_spec("resnet50_fp16_amp"), Catch::Contains("'fp16' and 'amp'"));
  CHECK_THROWS_WITH(parse_model_spec("resnet50_b64_b64"), Catch::Contains("both set the batch"));
  CHECK_THROWS_WITH(parse_model_spec("gpt2_s512_adam_s1024"), Catch::Contains("'s512' and 's1024'"));
  // A spelled default is kept: resnet50_b32 lowers as resnet50 does but prints as written.
  CHECK(parse_model_spec("resnet50_b32")->options == parse_model_spec("resnet50")->options);
  CHECK(to_string(*parse_model_spec("resnet50_b32")) == "resnet50_b32");
}

TEST_CASE("model spec: set_model_token builds what the parser would", "[model_spec]") {
  ModelSpec spec = *parse_model_spec("bert_base");
  set_model_token(spec, model_token("amp"), 0, "bert_base");
  set_model_token(spec, model_token("s"), 256, "bert_base");
  set_model_token(spec, model_token("b"), 8, "bert_base");
  CHECK(spec == *parse_model_spec("bert_base_amp_s256_b8"));
  CHECK(to_string(spec) == "bert_base_amp_s256_b8");
  // Setting a key the spec has replaces it (a sweep's axis over the workload's own token).
  ModelSpec swept = spec;
  set_model_token(swept, model_token("b"), 16, "bert_base_amp_s256_b8");
  set_model_token(swept, model_token("bf16"), 0, "bert_base_amp_s256_b8");
  CHECK(to_string(swept) == "bert_base_bf16_s256_b16");
  set_model_token(spec, model_token("train"), 0, "bert_base");  // a sweep word: sets nothing
  CHECK(spec == *parse_model_spec("bert_base_amp_s256_b8"));
  CHECK_THROWS_WITH(set_model_token(spec, model_token("b"), 0, "bert_base"), Catch::Contains("'b0' is out of range"));
  ModelSpec cnn = *parse_model_spec("resnet50");
  CHECK_THROWS_WITH(set_model_token(cnn, model_token("s"), 64, "resnet50"), Catch::Contains("takes no sequence length"));
  CHECK_THROWS_AS(model_token("bogus"), Error);
}

TEST_CASE("model spec: every row of the token table parses, prints and shows in the help", "[model_spec]") {
  const std::string help = model_spec_tokens();
  std::set<std::string> axes;
  for (const ModelToken& token : model_tokens()) {
    INFO(token.word);
    if (!token.axis.empty()) axes.insert(std::string(token.axis));
    if (!token.spelled) {
      CHECK_THROWS_AS(parse_model_spec("bert_base_" + std::string(token.word)), Error);
      continue;
    }
    CHECK_THAT(help, Catch::Contains(std::string(token.word)) && Catch::Contains(std::string(token.help)));
    // A decoder's keys go after a ':' on a decoder; 2 fits every other numbered key, and
    // 32 (2048 tokens for positions, tinyllama's default sequence being 1024) a decoder's.
    const bool decoder = token.key >= kFirstListedKey;
    const std::string base = decoder ? "tinyllama_1b:" : "bert_base_";
    std::string written = spell(token, !decoder ? 2 : token.key == ModelKey::positions ? 2048 : 32);
    if (token.key == ModelKey::zero) written += ",world=32";  // zero=S and world=N come together
    if (token.key == ModelKey::world) written = "zero=3," + written;
    const auto spec = parse_model_spec(base + written);
    REQUIRE(spec);
    CHECK(spec->names(token.key));
    const std::string printed = to_string(*spec);
    CHECK(*parse_model_spec(printed) == *spec);
    if (token.word != "fp16") CHECK(printed == base + written);
  }
  CHECK(axes == std::set<std::string>{"batch", "sequence", "precision", "optimizer", "accumulation", "steps", "mode"});
  CHECK_THROWS_WITH(parse_model_spec("resnet50_bogus"), Catch::Contains("unknown token 'bogus'") && Catch::Contains(help));
}

}  // namespace
}  // namespace allocsim
