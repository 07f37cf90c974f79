// QLoRA's 4-bit base and bitsandbytes' optimizers, and one rank of ZeRO and FSDP
// (bitsandbytes.hpp, sharding.hpp): what the trace holds, worked from the layouts and the
// model's own parameters.
#include <catch2/catch.hpp>

#include <algorithm>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "sim/error.hpp"
#include "workloads/catalogue.hpp"
#include "workloads/model/model_spec.hpp"
#include "workloads/model/sharding.hpp"

namespace allocsim {
namespace {

using Filter = std::function<bool(Tag, std::string_view)>;

std::string_view layer_of(const Trace& trace, AllocId id) { return trace.layer_names[trace.layer[index_of(id)]]; }

// Bytes the filter picks alive at the trace's end, and the most alive at once.
struct Alive {
  Bytes at_end = 0;
  Bytes peak = 0;
};

Alive alive(const Trace& trace, const Filter& picks) {
  std::vector<bool> picked(trace.requested.size(), false);
  Alive result;
  Bytes now = 0;
  for (const Event& event : trace.events) {
    const std::size_t i = index_of(event.id);
    if (event.op == Op::alloc && picks(event.tag, layer_of(trace, event.id))) {
      picked[i] = true;
      now += trace.bytes_of(event.id);
      result.peak = std::max(result.peak, now);
    } else if (event.op == Op::free && picked[i]) {
      picked[i] = false;
      now -= trace.bytes_of(event.id);
    }
  }
  result.at_end = now;
  return result;
}

Filter tagged(Tag tag) {
  return [tag](Tag t, std::string_view) { return t == tag; };
}

bool base_projection(std::string_view layer) {
  static constexpr std::string_view kBases[] = {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj",
                                                "down_proj"};
  return std::any_of(std::begin(kBases), std::end(kBases), [&](std::string_view b) { return layer.ends_with(b); });
}

// Every parameter tensor's elements, in the model's order.
std::vector<std::int64_t> parameter_tensors(const Model& model) {
  std::vector<std::int64_t> tensors;
  for (const Node node : boost::make_iterator_range(boost::vertices(model.graph))) {
    for (const std::int64_t elements : model.graph[node].params) tensors.push_back(elements);
  }
  return tensors;
}

Model build(std::string_view spec) {
  const auto parsed = parse_model_spec(spec);
  REQUIRE(parsed);
  return parsed->build();
}

// d_model 128, d_ff 256, two heads of 64 (kv too): q, k, v and o are 128 x 128, gate, up and
// down 128 x 256.
constexpr std::string_view kQlora =
    "decoder_bf16_adamw_s16_b1_steps1:layers=2,d_model=128,heads=2,d_ff=256,vocab=100,rope,qlora=4";

}  // namespace

TEST_CASE("qlora's base weights take the NF4 layout with double quantisation", "[decoder][qlora]") {
  // Per layer, by hand (quantize_4bit, blocksize 64, compress_statistics; second level 256):
  //   q, k, v, o: 16,384 values: packed 8,192 B; 256 absmax as one byte each 256 B; one
  //               second-level absmax 4 B; offset 4 B; the NF4 code 64 B       =  8,520 B each
  //   gate, up, down: 32,768 values: packed 16,384 B; 512 B; 2 x 4 = 8 B; 4 B; 64 B = 16,972 B each
  //   a layer: 4 x 8,520 + 3 x 16,972 = 84,996 B; two layers 169,992 B; plus the dynamic map
  //   of the second level, 256 fp32 = 1,024 B, once: 171,016 B.
  const Trace trace = load_workload(kQlora);
  const Alive base = alive(trace, [](Tag tag, std::string_view layer) {
    return tag == Tag::weight && (base_projection(layer) || layer == "bitsandbytes.dynamic_map");
  });
  CHECK(base.at_end == 171'016);
  // Loading quantizes one weight at a time: its compute-dtype copy (bf16) comes and goes, so the
  // most alive is the last weight's 128 x 256 x 2 B beside everything quantized before it, with
  // its fp32 absmax (512 x 4 B) and its own kept tensors.
  CHECK(base.peak == 171'016 + 128 * 256 * 2 + 512 * 4);
}

TEST_CASE("qlora's base has no gradients or optimizer state", "[decoder][qlora]") {
  const Trace trace = load_workload(kQlora);
  const auto spec = parse_model_spec(kQlora);
  REQUIRE(spec);
  DecoderConfig plain = spec->decoder;
  plain.lora = 0;
  const auto adapters = static_cast<Bytes>(spec->decoder.parameter_count() - plain.parameter_count());
  REQUIRE(adapters == 2 * 2 * 4 * (128 + 128));  // rank-4 lora_A and lora_B on q and v of two layers
  // AdamW: exp_avg and exp_avg_sq (fp32) of the adapters alone, and the GradScaler's 4 B.
  const Alive state = alive(trace, tagged(Tag::optimizer));
  CHECK(state.at_end == 2 * 4 * adapters + 4);
  // The kept .grad tensors are the adapters' (fp32), nothing of the base.
  Bytes base_grads = 0;
  for (const Event& event : trace.events) {
    if (event.op != Op::alloc || event.tag != Tag::gradient) continue;
    const std::string_view layer = layer_of(trace, event.id);
    if (base_projection(layer) && (trace.bytes_of(event.id) == 128 * 128 * 4 || trace.bytes_of(event.id) == 128 * 256 * 4)) {
      base_grads += trace.bytes_of(event.id);
    }
  }
  CHECK(base_grads == 0);
  // The .grad tensors alive after the step (set_to_none frees them in the next) are the
  // adapters' alone, fp32.
  CHECK(alive(trace, tagged(Tag::gradient)).at_end == 4 * adapters);
}

TEST_CASE("qlora dequantizes a transient compute-dtype weight per use", "[decoder][qlora]") {
  // Forward dequantizes each base weight once; backward again where the input needs a gradient:
  // not in layer 0, whose input is the frozen embedding's; checkpointing reruns each layer.
  const auto count = [](const Trace& trace, std::string_view layer) {
    int n = 0;
    for (const Event& event : trace.events) {
      if (event.op == Op::alloc && event.tag == Tag::temp && layer_of(trace, event.id) == layer &&
          trace.bytes_of(event.id) == 128 * 128 * 2) {
        ++n;
      }
    }
    return n;
  };
  const Trace plain = load_workload(kQlora);
  CHECK(count(plain, "model.layers.0.self_attn.q_proj") == 1);
  CHECK(count(plain, "model.layers.1.self_attn.q_proj") == 2);
  const Trace checkpointed = load_workload(std::string(kQlora) + ",ckpt");
  CHECK(count(checkpointed, "model.layers.1.self_attn.q_proj") == 3);
}

TEST_CASE("bitsandbytes' 8-bit AdamW keeps uint8 state with a blockwise absmax; paged state is untraced",
          "[decoder][qlora]") {
  // Full fine-tuning of a small decoder (d_model 512: the projections have 262,144 values, the
  // norms 512): a tensor below 4,096 values keeps fp32 state (2 x 4 B a value), a larger one
  // two uint8 states and two fp32 absmax per 256 values; paged puts the states (not the absmax)
  // of tensors of 100,000 values or more in unified memory. Plus the two 1 KiB maps and the
  // GradScaler's 4 B.
  const std::string spec = "decoder_bf16_s16_b1_steps1:layers=1,d_model=512,heads=8,d_ff=1024,vocab=1000,rope";
  const auto expected = [&](bool paged) {
    Bytes bytes = 2 * 1024 + 4;
    for (const std::int64_t n : parameter_tensors(build(spec))) {
      const auto values = static_cast<Bytes>(n);
      if (n < 4096) {
        bytes += 8 * values;
      } else {
        bytes += 2 * 4 * ((values + 255) / 256) + (paged && n >= 100'000 ? 0 : 2 * values);
      }
    }
    return bytes;
  };
  CHECK(alive(load_workload(spec + ",adamw8bit"), tagged(Tag::optimizer)).at_end == expected(false));
  CHECK(alive(load_workload(spec + ",pagedadamw8bit"), tagged(Tag::optimizer)).at_end == expected(true));
  CHECK(expected(true) < expected(false));
}

namespace {

constexpr std::string_view kSharded = "decoder_bf16_adamw_fused_s32_b1_steps1:layers=4,d_model=256,heads=4,d_ff=512,vocab=1000,rope";

struct Shards {
  Bytes elements = 0;  // this rank's parameters, summed over units
  Bytes largest = 0;   // the largest unit, padded (gathered) elements
  Bytes pair = 0;      // the most padded elements two units running one after the other hold
};

Shards shards(Sharding sharding, std::int64_t world) {
  const ShardPlan plan = plan_shards(build(kSharded), sharding, world);
  Shards s;
  for (const ShardUnit& unit : plan.units) {
    s.elements += static_cast<Bytes>(unit.shard);
    s.largest = std::max(s.largest, static_cast<Bytes>(unit.padded()));
  }
  for (std::size_t i = 0; i + 1 < plan.forward_order.size(); ++i) {
    const ShardUnit& a = plan.units[static_cast<std::size_t>(plan.forward_order[i])];
    const ShardUnit& b = plan.units[static_cast<std::size_t>(plan.forward_order[i + 1])];
    s.pair = std::max(s.pair, static_cast<Bytes>(a.padded() + b.padded()));
  }
  return s;
}

Bytes parameters() { return static_cast<Bytes>(build(kSharded).parameter_count()); }

Filter gathered() {
  return [](Tag tag, std::string_view layer) { return tag == Tag::weight && layer.ends_with(".all_gather"); };
}

}  // namespace

TEST_CASE("zero=3 over 8 ranks holds an eighth of parameters, gradients and state, plus gathered units",
          "[decoder][sharding]") {
  const Trace trace = load_workload(std::string(kSharded) + ",zero=3,world=8");
  const Shards s = shards(Sharding::zero3, 8);
  // Each unit padded to a multiple of 8: an eighth of the parameters, up to a value per unit more.
  CHECK(s.elements * 8 >= parameters());
  CHECK(s.elements * 8 < parameters() + 8 * 7);
  // Parameters: the bf16 partition and its fp32 master; gradients: the bf16 partition, alive
  // after backward; AdamW's two fp32 states of the master partition (and the GradScaler's 4 B).
  const Alive weights = alive(trace, tagged(Tag::weight));
  CHECK(weights.at_end == s.elements * (2 + 4));
  CHECK(alive(trace, tagged(Tag::gradient)).at_end == s.elements * 2);
  CHECK(alive(trace, tagged(Tag::optimizer)).at_end == s.elements * 8 + 4);
  // Gathered in bf16 one unit ahead (prefetch): the most alive is two neighbouring units, at
  // least the largest one.
  const Alive gathers = alive(trace, gathered());
  CHECK(gathers.peak == s.pair * 2);
  CHECK(gathers.peak >= s.largest * 2);
  CHECK(gathers.at_end == 0);
  CHECK(weights.peak == weights.at_end + s.pair * 2);
}

TEST_CASE("zero=3 gathers each unit once per forward and once per backward, checkpointed or not",
          "[decoder][sharding]") {
  const ShardPlan plan = plan_shards(build(kSharded), Sharding::zero3, 8);
  const auto gathers = [](const Trace& trace) {
    int n = 0;
    for (const Event& event : trace.events) {
      if (event.op == Op::alloc && layer_of(trace, event.id).ends_with(".all_gather")) ++n;
    }
    return n;
  };
  const auto entries = static_cast<int>(plan.forward_order.size());
  CHECK(gathers(load_workload(std::string(kSharded) + ",zero=3,world=8")) == 2 * entries);
  const Trace checkpointed = load_workload(std::string(kSharded) + ",ckpt,zero=3,world=8");
  CHECK(gathers(checkpointed) == 2 * entries);  // the rerun of a layer finds it gathered
  CHECK(alive(checkpointed, gathered()).peak == shards(Sharding::zero3, 8).pair * 2);
  const Trace two_micro = load_workload(std::string(kSharded) + ",acc2,zero=3,world=8");
  CHECK(gathers(two_micro) == 4 * entries);
  // The second micro-batch adds into the gradient shards the first left.
  CHECK(alive(two_micro, tagged(Tag::gradient)).at_end == shards(Sharding::zero3, 8).elements * 2);
}

TEST_CASE("zero=1 shards optimizer state, zero=2 also gradients; neither gathers", "[decoder][sharding]") {
  const Bytes psi = parameters();
  const Shards s = shards(Sharding::zero1, 8);
  const Trace one = load_workload(std::string(kSharded) + ",zero=1,world=8");
  const Trace two = load_workload(std::string(kSharded) + ",zero=2,world=8");
  for (const Trace* trace : {&one, &two}) {
    // The module whole in bf16 beside the fp32 master partition; the state of the partition.
    CHECK(alive(*trace, tagged(Tag::weight)).at_end == psi * 2 + s.elements * 4);
    CHECK(alive(*trace, tagged(Tag::optimizer)).at_end == s.elements * 8 + 4);
    CHECK(alive(*trace, gathered()).peak == 0);
  }
  CHECK(alive(one, tagged(Tag::gradient)).at_end == psi * 2);         // every gradient, whole
  CHECK(alive(two, tagged(Tag::gradient)).at_end == s.elements * 2);  // the rank's partition
}

TEST_CASE("fsdp keeps fp32 flat shards and the root gathered through forward and backward", "[decoder][sharding]") {
  const Trace trace = load_workload(std::string(kSharded) + ",fsdp=8");
  const ShardPlan plan = plan_shards(build(kSharded), Sharding::fsdp, 8);
  REQUIRE(plan.root >= 0);
  const Shards s = shards(Sharding::fsdp, 8);
  CHECK(alive(trace, tagged(Tag::weight)).at_end == s.elements * 4);
  CHECK(alive(trace, tagged(Tag::gradient)).at_end == s.elements * 4);
  CHECK(alive(trace, tagged(Tag::optimizer)).at_end == s.elements * 8 + 4);
  // The root (embedding, final norm, lm_head) beside two gathered layers.
  Bytes layer = 0;
  for (const ShardUnit& unit : plan.units) {
    if (unit.name != "root") layer = std::max(layer, static_cast<Bytes>(unit.padded()));
  }
  const auto root = static_cast<Bytes>(plan.units[static_cast<std::size_t>(plan.root)].padded());
  CHECK(alive(trace, gathered()).peak == (root + 2 * layer) * 2);
}

TEST_CASE("sharding and qlora tokens: canonical spelling and errors", "[decoder][sharding][qlora]") {
  const std::string good = "llama2_7b_bf16_pagedadamw8bit:qlora=16,lora_targets=all,ckpt";
  const auto spec = parse_model_spec(good);
  REQUIRE(spec);
  CHECK(spec->decoder.nf4);
  CHECK(spec->decoder.lora == 16);
  CHECK(spec->options.optimizer == Optimizer::paged_adamw8bit);
  CHECK(parse_model_spec(to_string(*spec)) == spec);
  const auto zero = parse_model_spec("llama3_8b_bf16_adamw:zero=3,world=8,ckpt");
  REQUIRE(zero);
  CHECK(zero->options.sharding == Sharding::zero3);
  CHECK(zero->options.world == 8);
  CHECK(parse_model_spec(to_string(*zero)) == zero);
  CHECK(parse_model_spec("llama3_8b:fsdp=4")->options.sharding == Sharding::fsdp);

  const auto message = [](std::string_view text) {
    try {
      (void)parse_model_spec(text);
    } catch (const Error& error) {
      return std::string(error.what());
    }
    return std::string("no error");
  };
  CHECK_THAT(message("llama3_8b:zero=4,world=8"), Catch::Contains("unknown token 'zero=4'") && Catch::Contains("zero=3 ("));
  CHECK_THAT(message("llama3_8b:zero=3,world=0"), Catch::Contains("'world=0' is out of range"));
  CHECK_THAT(message("llama3_8b:qlora=16,lora=8"), Catch::Contains("both set the LoRA rank"));
  CHECK_THAT(message("llama3_8b:zero=3"), Catch::Contains("zero=S and world=N come together"));
  CHECK_THAT(message("llama3_8b:fsdp=8,world=8"), Catch::Contains("fsdp=N gives the ranks itself"));
  CHECK_THAT(message("llama3_8b:qlora=16,fsdp=8"), Catch::Contains("not modelled"));
  CHECK_THAT(message("resnet50:zero=1,world=2"), Catch::Contains("is a decoder's"));
}

// ---- the frozen base in the spec's dtype --------------------------------------------

// Llama 2 7B's parameters (its config.json; docs/llm.md's preset table).
constexpr Bytes kLlama2Parameters = 6'738'415'616;
// LoRA r=16 on q_proj and v_proj: lora_A 16 x 4096 and lora_B 4096 x 16 each, in 32 layers.
constexpr Bytes kLlama2LoraQv16 = 32 * 2 * (16 * 4096 + 4096 * 16);

TEST_CASE("a LoRA base and inference hold their weights in the spec's dtype", "[decoder][lora]") {
  // bf16: the frozen base in 2 bytes a parameter, as from_pretrained(torch_dtype=torch.bfloat16)
  // loads it; the trained adapters stay fp32 (PEFT's autocast_adapter_dtype). What is alive
  // after the step tagged weight is the parameters alone (autocast's casts go with the step).
  REQUIRE(parse_model_spec("llama2_7b")->decoder.parameter_count() == static_cast<std::int64_t>(kLlama2Parameters));
  const Trace lora = load_workload("llama2_7b_bf16_adamw_s512_b1_steps1:lora=16");
  CHECK(alive(lora, tagged(Tag::weight)).at_end == kLlama2Parameters * 2 + kLlama2LoraQv16 * 4);
  // Inference: every parameter in the compute dtype.
  const Trace inference = load_workload("llama2_7b_bf16_s512_b1_infer");
  CHECK(alive(inference, tagged(Tag::weight)).at_end == kLlama2Parameters * 2);
  // amp is fp16: 2 bytes too; fp32 keeps 4.
  CHECK(alive(load_workload("llama2_7b_amp_s512_b1_infer"), tagged(Tag::weight)).at_end == kLlama2Parameters * 2);
  CHECK(alive(load_workload("llama2_7b_s512_b1_infer"), tagged(Tag::weight)).at_end == kLlama2Parameters * 4);
  // fp32base says otherwise: the base in fp32 under bf16 autocast, as before.
  const Trace fp32_base = load_workload("llama2_7b_bf16_adamw_s512_b1_steps1_fp32base:lora=16");
  CHECK(alive(fp32_base, tagged(Tag::weight)).at_end == (kLlama2Parameters + kLlama2LoraQv16) * 4);
  CHECK(alive(load_workload("llama2_7b_bf16_s512_b1_infer_fp32base"), tagged(Tag::weight)).at_end ==
        kLlama2Parameters * 4);
  // A base in the compute dtype needs no autocast copy of its weights: the only weight-tagged
  // allocations after loading are the adapters' casts (2 bytes a value).
  Bytes loaded = 0;
  Bytes casts = 0;
  for (const Event& event : lora.events) {
    if (event.op != Op::alloc || event.tag != Tag::weight) continue;
    (loaded < kLlama2Parameters * 2 + kLlama2LoraQv16 * 4 ? loaded : casts) += lora.bytes_of(event.id);
  }
  CHECK(casts == kLlama2LoraQv16 * 2);
  CHECK(lora.live_lower_bound < fp32_base.live_lower_bound);
}

TEST_CASE("QLoRA's unquantized parameters stay fp32; TensorFlow keeps its variables fp32", "[decoder][lora]") {
  // prepare_model_for_kbit_training casts every parameter that is not 4-bit to fp32: the
  // embedding, the norms and lm_head (worked by hand for kQlora: vocab 100 x 128 twice,
  // untied; five RMSNorm weights of 128).
  const Trace qlora = load_workload(kQlora);
  const Alive unquantized = alive(qlora, [](Tag tag, std::string_view layer) {
    return tag == Tag::weight && !base_projection(layer) && layer != "bitsandbytes.dynamic_map" &&
           layer.find("lora_") == std::string_view::npos;
  });
  CHECK(unquantized.at_end == (2 * 100 * 128 + 5 * 128) * 4);
  // Keras' mixed precision keeps variables in fp32, under inference too.
  const auto tf = parse_model_spec("decoder_bf16_s16_b1_infer_tf:layers=2,d_model=128,heads=2,d_ff=256,vocab=100,rope");
  REQUIRE(tf);
  const Trace tf_trace = load_workload(to_string(*tf));
  CHECK(alive(tf_trace, tagged(Tag::weight)).at_end == static_cast<Bytes>(tf->decoder.parameter_count()) * 4);
}

TEST_CASE("fp32base: spelled, and refused where a generation loads its own dtype", "[decoder][lora]") {
  const auto spec = parse_model_spec("llama2_7b_bf16_adamw_fp32base:lora=16");
  REQUIRE(spec);
  CHECK(spec->options.fp32_base);
  CHECK(to_string(*spec) == "llama2_7b_bf16_adamw_fp32base:lora=16");
  CHECK(parse_model_spec(to_string(*spec)) == spec);
  CHECK_THROWS_WITH(parse_model_spec("llama2_7b_infer_prefill8_decode8_b1_bf16_fp32base"),
                    Catch::Contains("fp32base") && Catch::Contains("generation"));
}

}  // namespace allocsim
