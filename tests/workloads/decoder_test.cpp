// The decoder family (decoder.hpp): the presets' parameter counts from their published
// configurations, the spec's grammar after the ':', the recorded language model's peak,
// and what eager and flash attention keep.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <string_view>

#include "shared_traces.hpp"
#include "sim/error.hpp"
#include "workloads/catalogue.hpp"
#include "workloads/model/model_spec.hpp"
#include "workloads/model/zoo.hpp"

namespace allocsim {
namespace {

Model build(std::string_view name) {
  const ZooModel* model = find_zoo_model(name);
  REQUIRE(model != nullptr);
  REQUIRE(model->is_decoder());
  return model->build();
}

std::string_view layer_of(const Trace& trace, AllocId id) { return trace.layer_names[trace.layer[index_of(id)]]; }

// Bytes of every forward allocation (Tag::activation) whose layer ends with `suffix`.
Bytes bytes_named(const Trace& trace, std::string_view suffix) {
  Bytes total = 0;
  for (const Event& event : trace.events) {
    if (event.op == Op::alloc && event.tag == Tag::activation && layer_of(trace, event.id).ends_with(suffix)) {
      total += trace.bytes_of(event.id);
    }
  }
  return total;
}

// A small decoder, to keep the traces short.
constexpr std::string_view kSmall = "decoder_b2_s64:layers=2,d_model=256,heads=4,d_ff=512,vocab=1000,rope";

}  // namespace

TEST_CASE("decoder presets have their published parameter counts", "[decoder]") {
  // Worked out from each config.json (zoo.cpp lists the sums); the graph's parameters and
  // DecoderConfig::parameter_count must both give them.
  const auto [name, expected] = GENERATE(table<std::string_view, std::int64_t>({
      {"llama2_7b", 6'738'415'616},
      {"llama3_8b", 8'030'261'248},
      {"mistral_7b", 7'241'732'096},
      {"tinyllama_1b", 1'100'048'384},
      {"qwen2_5_0_5b", 494'032'768},
      {"gpt2_medium", 354'823'168},
      {"gpt2_large", 774'030'080},
      {"gpt2_xl", 1'557'611'200},
  }));
  INFO(name);
  const Model model = build(name);
  CHECK(model.parameter_count() == expected);
  CHECK(find_zoo_model(name)->decoder->parameter_count() == expected);
}

TEST_CASE("a tied decoder allocates its LM head's weight once", "[decoder]") {
  // Qwen2.5-0.5B ties lm_head to embed_tokens: weights are 4 B per parameter, none for lm_head.
  const Trace trace = load_workload("qwen2_5_0_5b_s16_b1_sgd_steps1:layers=1");
  Bytes weights = 0;
  for (const Event& event : trace.events) {
    if (event.op != Op::alloc || event.tag != Tag::weight) continue;
    weights += trace.bytes_of(event.id);
    CHECK(layer_of(trace, event.id) != "lm_head");
  }
  const auto spec = parse_model_spec("qwen2_5_0_5b:layers=1");
  REQUIRE(spec);
  CHECK(weights == Bytes{4} * static_cast<Bytes>(spec->decoder.parameter_count()));
}

TEST_CASE("decoder specs: keys after the colon, canonical spelling, errors", "[decoder]") {
  const auto spec = parse_model_spec("decoder_b4_s128:vocab=10000,layers=24,d_model=1024,heads=16,d_ff=4096,rope,bf16");
  REQUIRE(spec);
  CHECK(spec->decoder.layers == 24);
  CHECK(spec->decoder.vocab == 10000);
  CHECK(spec->decoder.rope);
  CHECK(spec->options.precision == Precision::bf16);
  CHECK(spec->options.batch == 4);
  const std::string canonical = to_string(*spec);
  CHECK(canonical == "decoder_bf16_s128_b4:layers=24,d_model=1024,heads=16,d_ff=4096,vocab=10000,rope");
  CHECK(parse_model_spec(canonical) == spec);
  // A preset takes its configuration from the row; keys change it.
  const auto llama = parse_model_spec("llama2_7b:layers=2,attn=eager");
  REQUIRE(llama);
  CHECK(llama->decoder.layers == 2);
  CHECK(llama->decoder.d_model == 4096);
  CHECK(llama->decoder.attention == Attention::eager);
  CHECK(parse_model_spec(to_string(*llama)) == llama);

  CHECK_THROWS_WITH(load_workload("decoder:layers=2,d_model=64"), Catch::Contains("must each be given"));
  CHECK_THROWS_WITH(load_workload("resnet50:layers=2"), Catch::Contains("is a decoder's"));
  CHECK_THROWS_WITH(load_workload("llama2_7b:attn=eager,attn=flash"), Catch::Contains("both set the attention"));
  CHECK_THROWS_WITH(load_workload("decoder:layers=2,d_model=64,heads=3,d_ff=8,vocab=8,rope"),
                    Catch::Contains("multiple of heads"));
  CHECK_THROWS_WITH(load_workload("llama2_7b_s5000"), Catch::Contains("positions is 4096"));
  CHECK_THROWS_WITH(load_workload("decoder:layers=1,d_model=8,heads=2,d_ff=8,vocab=8"),
                    Catch::Contains("positions (the learned table's rows) must be given"));
}

TEST_CASE("eager attention keeps the score matrices, flash a log-sum-exp", "[decoder]") {
  // Per layer eager allocates B x H x S x S scores (bf16), scaled (bf16), masked and the
  // softmax's probabilities (fp32), and probs.to(bf16) for the second matmul; flash none of
  // them, only the fp32 log-sum-exp, B x H x S.
  const std::string base = std::string(kSmall) + ",bf16";
  const Trace eager = load_workload(base + ",attn=eager");
  const Trace flash = load_workload(base + ",attn=flash");
  const Bytes scores = Bytes{2} * 4 * 64 * 64;  // B x H x S x S elements
  CHECK(bytes_named(eager, "self_attn.scores") == 2 * 2 * 2 * scores);  // 2 layers, 2 steps, bf16
  CHECK(bytes_named(eager, "self_attn.softmax") == 2 * 2 * 4 * scores);
  CHECK(bytes_named(flash, "self_attn.scores") == 0);
  CHECK(bytes_named(flash, "self_attn.sdpa") > 0);
  CHECK(flash.live_lower_bound < eager.live_lower_bound);
}

namespace {

struct ActivationProfile {
  Bytes at_backward = 0;  // live activation bytes when backward allocates its first gradient
  Bytes peak = 0;         // the most live at once
  Bytes at_end = 0;
};

// Over the last step of `spec` (steps1: the only one).
ActivationProfile activations(const std::string& spec) {
  const Trace trace = load_workload(spec);
  ActivationProfile profile;
  Bytes live = 0;
  bool backward = false;
  for (const Event& event : trace.events) {
    if (!backward && event.op == Op::alloc && event.tag == Tag::gradient) {
      profile.at_backward = live;
      backward = true;
    }
    if (event.tag != Tag::activation) continue;
    if (event.op == Op::alloc) live += trace.bytes_of(event.id);
    if (event.op == Op::free) live -= trace.bytes_of(event.id);
    profile.peak = std::max(profile.peak, live);
  }
  profile.at_end = live;
  return profile;
}

}  // namespace

TEST_CASE("ckpt keeps one input per layer and recomputes one layer at a time", "[decoder]") {
  // Two more layers add exactly two more saved layer inputs (B x S x d_model fp32: the
  // residual stream) to what forward leaves for backward, and the same to the peak, which
  // falls in a layer's recomputation; without ckpt they add both layers' activations.
  const auto spec = [](int layers, bool ckpt) {
    return "decoder_b2_s64_bf16_sgd_steps1:layers=" + std::to_string(layers) +
           ",d_model=256,heads=4,d_ff=2048,vocab=1000,rope" + (ckpt ? ",ckpt" : "");
  };
  const Bytes layer_input = Bytes{2} * 64 * 256 * 4;
  const ActivationProfile two = activations(spec(2, true));
  const ActivationProfile four = activations(spec(4, true));
  CHECK(four.at_backward - two.at_backward == 2 * layer_input);
  CHECK(four.peak - two.peak == 2 * layer_input);
  CHECK(four.at_end == 0);
  const ActivationProfile plain_two = activations(spec(2, false));
  const ActivationProfile plain_four = activations(spec(4, false));
  CHECK(plain_four.at_backward - plain_two.at_backward > 10 * layer_input);
  CHECK(four.peak < plain_four.peak);
}

TEST_CASE("lora trains its adapters alone: no gradient or optimizer state for the base", "[decoder]") {
  // AdamW keeps exp_avg and exp_avg_sq, 4 B each, per trainable parameter: with lora=8 on q
  // and v, per layer lora_A 8 x 256 and lora_B 256 x 8 for q, the same for v (kv_heads 4:
  // v is 256 wide too). Kept gradients are 4 B per adapter parameter.
  const std::string model = "decoder_b2_s64_adamw_steps1:layers=2,d_model=256,heads=4,d_ff=512,vocab=1000,rope";
  const auto spec = parse_model_spec(model + ",lora=8");
  REQUIRE(spec);
  const std::int64_t adapters = 2 * 2 * (8 * 256 + 256 * 8);
  CHECK(spec->decoder.parameter_count() == spec->build().parameter_count());
  const auto base = parse_model_spec(model);
  REQUIRE(base);
  CHECK(spec->decoder.parameter_count() - base->decoder.parameter_count() == adapters);
  const Trace trace = load_workload(to_string(*spec));
  Bytes optimizer = 0;
  for (const Event& event : trace.events) {
    if (event.op == Op::alloc && event.tag == Tag::optimizer) optimizer += trace.bytes_of(event.id);
  }
  CHECK(optimizer == Bytes{8} * adapters);
  // All targets: every projection of the layers gets an adapter, still nothing for the base.
  const auto all = parse_model_spec(model + ",lora=8,lora_targets=all");
  REQUIRE(all);
  CHECK(all->decoder.parameter_count() == all->build().parameter_count());
  CHECK(all->decoder.parameter_count() - base->decoder.parameter_count() ==
        2 * 8 * (4 * (256 + 256) + 2 * (256 + 512) + (512 + 256)));
  // A frozen base saves less for backward than full fine-tuning.
  CHECK(trace.live_lower_bound < load_workload(model).live_lower_bound);
}

TEST_CASE("the recorded medium language model's peak is within 3 % of its lowering", "[decoder][shared]") {
  // lm_medium_ctx128_train (shared/traces/README.md): CS336's BasicsTransformerLM, d_model
  // 1024, d_ff 4096 SwiGLU, 24 layers, 16 heads, vocab 10,000, RMSNorm, RoPE, an untied
  // head, context 128, batch 4, fp32 without autocast (no allocation in the recording comes
  // from a cast; its q, k, v are 4 B an element), an AdamW stepping one parameter at a time.
  // Both figures are peaks of requested bytes alive (Trace::live_lower_bound); the snapshot
  // reader allocates the blocks live before the recording first.
  const auto path = test::shared_trace("lm_medium_ctx128_train.snapshot.pickle");
  if (!path) return;
  const Trace recorded = load_workload(path->string());
  const Trace lowered = load_workload(
      "decoder_adamw_forloop_s128_b4:layers=24,d_model=1024,heads=16,d_ff=4096,vocab=10000,norm=rmsnorm,"
      "ffn=swiglu,rope,untied,attn=eager");
  const double ratio = static_cast<double>(lowered.live_lower_bound) / static_cast<double>(recorded.live_lower_bound);
  INFO("recorded " << recorded.live_lower_bound << " B, lowered " << lowered.live_lower_bound << " B");
  WARN("recorded " << recorded.live_lower_bound << " B, lowered " << lowered.live_lower_bound << " B");
  CHECK(ratio > 0.97);
  CHECK(ratio < 1.03);
}

}  // namespace allocsim
