#include "workloads/model/model_spec.hpp"

#include <algorithm>
#include <array>
#include <charconv>

#include "sim/error.hpp"

namespace allocsim {
namespace {

constexpr auto num(auto value) { return static_cast<std::int64_t>(value); }

// Display order for help; the canonical spelling's order is ModelKey's.
constexpr std::array kTokens{
    ModelToken{"b", true, ModelKey::batch, 0, "samples per micro-batch (per step without accN), default 32", "batch"},
    ModelToken{"s", true, ModelKey::sequence, 0,
               "tokens per sample, transformers only: default 128 for bert, 1024 for gpt2", "sequence"},
    ModelToken{"fp32", false, ModelKey::precision, num(Precision::fp32), "fp32 throughout, the default", "precision"},
    ModelToken{"amp", false, ModelKey::precision, num(Precision::amp), "autocast fp16, fp32 master weights",
               "precision"},
    ModelToken{"fp16", false, ModelKey::precision, num(Precision::amp), "the same as amp", ""},
    ModelToken{"bf16", false, ModelKey::precision, num(Precision::bf16), "autocast bf16", "precision"},
    ModelToken{"sgd", false, ModelKey::optimizer, num(Optimizer::sgd), "plain SGD, no state", "optimizer"},
    ModelToken{"momentum", false, ModelKey::optimizer, num(Optimizer::momentum), "SGD with momentum, the default",
               "optimizer"},
    ModelToken{"adam", false, ModelKey::optimizer, num(Optimizer::adam), "Adam", "optimizer"},
    ModelToken{"adamw", false, ModelKey::optimizer, num(Optimizer::adamw), "AdamW", "optimizer"},
    ModelToken{"adamw8bit", false, ModelKey::optimizer, num(Optimizer::adamw8bit),
               "bitsandbytes' AdamW8bit: uint8 state with an fp32 absmax per 256 values (fp32 state below 4096 "
               "elements), a fused kernel",
               ""},
    ModelToken{"adamw32bit", false, ModelKey::optimizer, num(Optimizer::adamw32bit),
               "bitsandbytes' AdamW32bit: fp32 state, a fused kernel", ""},
    ModelToken{"pagedadamw8bit", false, ModelKey::optimizer, num(Optimizer::paged_adamw8bit),
               "bitsandbytes' PagedAdamW8bit: as adamw8bit, the state of tensors of 100,000 elements or more in "
               "CUDA unified memory, outside the allocator and the trace",
               ""},
    ModelToken{"pagedadamw32bit", false, ModelKey::optimizer, num(Optimizer::paged_adamw32bit),
               "bitsandbytes' PagedAdamW32bit: as adamw32bit, paged as pagedadamw8bit", ""},
    ModelToken{"fused", false, ModelKey::fused, 1, "fused optimizer: no foreach temporaries", ""},
    ModelToken{"keepgrad", false, ModelKey::keepgrad, 1, "zero_grad without set_to_none", ""},
    ModelToken{"acc", true, ModelKey::accumulation, 0, "micro-batches of bN per optimizer step", "accumulation"},
    ModelToken{"steps", true, ModelKey::steps, 0,
               "optimizer steps, default 2: the warm-up (optimizer state made) and one in the steady state; "
               "steps1 for the first alone",
               "steps"},
    ModelToken{"train", false, ModelKey::mode, 1, "a training step, the default (a sweep word, not a token)", "mode",
               false},
    ModelToken{"infer", false, ModelKey::mode, 0, "forward only, under no_grad", "mode"},
    ModelToken{"nows", false, ModelKey::workspace, 0, "no cuDNN workspace", ""},
    ModelToken{"torch", false, ModelKey::framework, num(Framework::torch), "PyTorch eager, the default", ""},
    ModelToken{"tf", false, ModelKey::framework, num(Framework::tf), "TensorFlow 2 / Keras style", ""},
    ModelToken{"noruntime", false, ModelKey::runtime, 0,
               "no cuBLAS workspaces, the runtime allocations every torch run has (two, 8.1 MiB each or 32 MiB on "
               "sm_90; tf's are outside its allocator)",
               ""},
    ModelToken{"benchmark", false, ModelKey::benchmark, 1,
               "cudnn.benchmark=True: each convolution shape's first run tries a workspace of its im2col size (an "
               "estimate), freed after",
               ""},
    ModelToken{"fp32base", false, ModelKey::base, 1,
               "under amp or bf16, the parameters without a gradient (LoRA's frozen base, every one under infer) in "
               "fp32, autocast casting each per use (a model loaded without torch_dtype); by default they are held in "
               "the compute dtype, as from_pretrained(torch_dtype=...) loads them",
               ""},
    ModelToken{"ddp", false, ModelKey::ddp, 25,
               "DistributedDataParallel: NCCL buffers (an estimate, 16 MiB), the weights broadcast, gradient buckets "
               "of bucket_cap_mb=25 (1 MiB first)",
               ""},
    ModelToken{"ddp", true, ModelKey::ddp, 0, "the same with bucket_cap_mb=N", ""},
    ModelToken{"forloop", false, ModelKey::fused, 2,
               "foreach=False: the optimizer updates one parameter at a time (Adam: its sqrt and division, two "
               "temporaries the parameter's size) instead of the foreach default's one per parameter at once",
               ""},
    ModelToken{"prefill", true, ModelKey::prefill, 0,
               "generation with a KV cache (a decoder, with infer and decodeN): a prompt of N tokens per sequence, "
               "run in one forward",
               ""},
    ModelToken{"decode", true, ModelKey::decode, 0,
               "generation: N decode steps after the prefill, one token per sequence each; the LM head on the last "
               "position only",
               ""},
    // A decoder's configuration (decoder.hpp), after the ':'.
    ModelToken{"layers=", true, ModelKey::layers, 0, "decoder layers (num_hidden_layers)", ""},
    ModelToken{"d_model=", true, ModelKey::d_model, 0, "hidden size", ""},
    ModelToken{"heads=", true, ModelKey::heads, 0, "attention heads", ""},
    ModelToken{"kv_heads=", true, ModelKey::kv_heads, 0, "key/value heads (grouped-query), default heads", ""},
    ModelToken{"d_ff=", true, ModelKey::d_ff, 0, "MLP inner size (intermediate_size)", ""},
    ModelToken{"vocab=", true, ModelKey::vocab, 0, "vocabulary size", ""},
    ModelToken{"positions=", true, ModelKey::positions, 0,
               "max_position_embeddings: the learned position table's rows without rope, the longest sequence", ""},
    ModelToken{"norm=rmsnorm", false, ModelKey::norm, num(Norm::rmsnorm), "RMSNorm in fp32 (Llama's), the default", ""},
    ModelToken{"norm=layernorm", false, ModelKey::norm, num(Norm::layernorm), "LayerNorm with a bias (GPT-2's)", ""},
    ModelToken{"ffn=swiglu", false, ModelKey::ffn, num(Ffn::swiglu),
               "down(silu(gate(x)) * up(x)), three d_model x d_ff matrices, the default", ""},
    ModelToken{"ffn=gelu", false, ModelKey::ffn, num(Ffn::gelu), "c_proj(gelu_new(c_fc(x))), GPT-2's", ""},
    ModelToken{"rope", false, ModelKey::rope, 1, "rotary positions on q and k (no position table)", ""},
    ModelToken{"norope", false, ModelKey::rope, 0, "a learned position table of positions= rows", ""},
    ModelToken{"tied", false, ModelKey::tied, 1, "the LM head uses the embedding's weight", ""},
    ModelToken{"untied", false, ModelKey::tied, 0, "an LM head of its own, the default", ""},
    ModelToken{"bias", false, ModelKey::bias, num(Bias::all), "biases on every linear layer (GPT-2)", ""},
    ModelToken{"bias=qkv", false, ModelKey::bias, num(Bias::qkv), "biases on q, k, v only (Qwen2)", ""},
    ModelToken{"bias=none", false, ModelKey::bias, num(Bias::none), "no biases (Llama), the default", ""},
    ModelToken{"dropout", false, ModelKey::dropout, 1,
               "dropout 0.1 on embeddings, attention probabilities and residuals: a byte mask each", ""},
    ModelToken{"nodropout", false, ModelKey::dropout, 0, "no dropout (Llama's attention_dropout 0), the default", ""},
    ModelToken{"attn=eager", false, ModelKey::attention, num(Attention::eager),
               "the full B x heads x S x S scores and fp32 probabilities, saved (plain PyTorch ops, HF's eager; SDPA's "
               "math fallback does the same)",
               ""},
    ModelToken{"attn=sdpa", false, ModelKey::attention, num(Attention::sdpa),
               "F.scaled_dot_product_attention, HF's default: its flash or memory-efficient kernel keeps q, k, v, the "
               "output and an fp32 log-sum-exp",
               ""},
    ModelToken{"attn=flash", false, ModelKey::attention, num(Attention::flash), "flash attention, as sdpa", ""},
    ModelToken{"ckpt", false, ModelKey::checkpoint, 1,
               "activation checkpointing per decoder layer (HF gradient_checkpointing_enable): forward keeps each "
               "layer's input, backward reruns one layer at a time",
               ""},
    ModelToken{"lora=", true, ModelKey::lora, 0,
               "LoRA adapters of rank N (PEFT): lora_A and lora_B beside each target, trained; every other parameter "
               "frozen (no gradient, no optimizer state, a frozen linear saves no input)",
               ""},
    ModelToken{"lora_targets=qv", false, ModelKey::lora_targets, 0, "LoRA on q_proj and v_proj, PEFT's default", ""},
    ModelToken{"lora_targets=all", false, ModelKey::lora_targets, 1,
               "LoRA on every linear of the layers (q, k, v, o, gate, up, down)", ""},
    ModelToken{"qlora=", true, ModelKey::qlora, 0,
               "QLoRA: lora=N over a base whose layer linears keep their weights in bitsandbytes' NF4 (4 bits, an "
               "absmax per 64 values, double quantised), dequantized into the compute dtype per use; lm_head and "
               "embeddings unquantized",
               ""},
    ModelToken{"zero=1", false, ModelKey::zero, num(Sharding::zero1),
               "one rank of DeepSpeed ZeRO stage 1 over world=N ranks: fp32 master parameters and optimizer state "
               "sharded",
               ""},
    ModelToken{"zero=2", false, ModelKey::zero, num(Sharding::zero2), "ZeRO stage 2: gradients sharded too", ""},
    ModelToken{"zero=3", false, ModelKey::zero, num(Sharding::zero3),
               "ZeRO stage 3: parameters sharded too, each layer gathered before it runs, the next prefetched", ""},
    ModelToken{"world=", true, ModelKey::world, 0, "ranks a zero= stage shards over", ""},
    ModelToken{"fsdp=", true, ModelKey::fsdp, 0,
               "one rank of PyTorch FSDP FULL_SHARD over N ranks: a flat fp32 shard per decoder layer and the root, "
               "each layer all-gathered in the compute dtype with the next prefetched, gradients reduce-scattered",
               ""},
    ModelToken{"cache=dynamic", false, ModelKey::cache, num(KvCacheKind::dynamic),
               "generation: transformers' DynamicCache, the default: every forward torch.cat's each layer's keys and "
               "values into tensors one step longer, the old freed",
               ""},
    ModelToken{"cache=static", false, ModelKey::cache, num(KvCacheKind::fixed),
               "generation: StaticCache: each layer's keys and values for prefill + decode tokens, allocated at the "
               "first forward",
               ""},
    ModelToken{"cache=paged", false, ModelKey::cache, num(KvCacheKind::paged),
               "generation: vLLM's paged cache: per layer a key and a value block of block= tokens as each sequence "
               "grows, each its own allocation; a finished sequence's blocks freed",
               ""},
    ModelToken{"block=", true, ModelKey::block, 0, "cache=paged: tokens per block, default 16", ""},
    ModelToken{"len=", true, ModelKey::lengths, 0,
               "per-sequence lengths drawn uniformly from seed= (len=N: all N): a generation's decode steps per "
               "sequence; training's tokens per sample, each micro-batch padded to its longest or packed",
               "", true, true},
    ModelToken{"seed=", true, ModelKey::seed, 0, "the seed of len='s draws, default 1", ""},
    ModelToken{"packed", false, ModelKey::packing, 1,
               "training with len=: the sequences concatenated into rows of sN tokens, one shape every step", ""},
    ModelToken{"padded", false, ModelKey::packing, 0,
               "training with len=: each batch padded to its longest sequence, a new shape every step (the default)",
               ""},
};

// The largest value of a decoder's dimensions (Qwen's vocabulary is 151,936).
constexpr std::int64_t kMaxDimension = 100'000'000;

bool decoder_key(ModelKey key) { return key >= kFirstListedKey; }

// Batches, steps and micro-batches beyond this make traces no machine holds.
constexpr std::int64_t kMaxToken = 100'000;

// "b64" with prefix "b" -> 64; nullopt when the token is not prefix + digits.
std::optional<std::int64_t> numbered(std::string_view token, std::string_view prefix) {
  if (!token.starts_with(prefix) || token.size() == prefix.size()) return std::nullopt;
  std::int64_t value = 0;
  const char* begin = token.data() + prefix.size();
  const char* end = token.data() + token.size();
  const auto [at, error] = std::from_chars(begin, end, value);
  if (error != std::errc{} || at != end) return std::nullopt;
  return value;
}

// "len=8:64" with prefix "len=" -> encode_length_range(8, 64); "len=32" -> 32; nullopt when
// the token is not prefix + N or N:M. A bound past kMaxToken is out of range, not unknown.
std::optional<std::int64_t> length_range(std::string_view token, std::string_view prefix) {
  if (!token.starts_with(prefix)) return std::nullopt;
  const std::string_view range = token.substr(prefix.size());
  const std::size_t colon = range.find(':');
  const auto min = numbered(range.substr(0, colon), "");
  const auto max = colon == std::string_view::npos ? min : numbered(range.substr(colon + 1), "");
  if (!min || !max) return std::nullopt;
  if (*min < 1 || *max > kMaxToken || *min > *max) return -1;  // decodes to a range apply() calls out of range
  return encode_length_range(*min, *max);
}

std::int64_t get(const ModelSpec& spec, ModelKey key) {
  const LoweringOptions& o = spec.options;
  switch (key) {
    case ModelKey::precision: return num(o.precision);
    case ModelKey::optimizer: return num(o.optimizer);
    case ModelKey::sequence: return spec.sequence;
    case ModelKey::accumulation: return o.accumulation;
    case ModelKey::steps: return o.steps;
    case ModelKey::mode: return o.training ? 1 : 0;
    case ModelKey::fused: return o.fused ? 1 : o.for_loop ? 2 : 0;
    case ModelKey::keepgrad: return o.set_to_none ? 0 : 1;
    case ModelKey::workspace: return o.workspace ? 1 : 0;
    case ModelKey::framework: return num(o.framework);
    case ModelKey::runtime: return o.runtime ? 1 : 0;
    case ModelKey::benchmark: return o.benchmark ? 1 : 0;
    case ModelKey::base: return o.fp32_base ? 1 : 0;
    case ModelKey::ddp: return o.ddp_bucket_mib;
    case ModelKey::batch: return o.batch;
    case ModelKey::prefill: return spec.generation.prefill;
    case ModelKey::decode: return spec.generation.decode;
    case ModelKey::cache: return num(spec.generation.cache);
    case ModelKey::block: return spec.generation.block;
    case ModelKey::lengths: return encode_length_range(spec.lengths.min, spec.lengths.max);
    case ModelKey::seed: return static_cast<std::int64_t>(spec.lengths.seed);
    case ModelKey::packing: return spec.lengths.packed ? 1 : 0;
    case ModelKey::layers: return spec.decoder.layers;
    case ModelKey::d_model: return spec.decoder.d_model;
    case ModelKey::heads: return spec.decoder.heads;
    case ModelKey::kv_heads: return spec.decoder.kv_heads;
    case ModelKey::d_ff: return spec.decoder.d_ff;
    case ModelKey::vocab: return spec.decoder.vocab;
    case ModelKey::positions: return spec.decoder.positions;
    case ModelKey::norm: return num(spec.decoder.norm);
    case ModelKey::ffn: return num(spec.decoder.ffn);
    case ModelKey::rope: return spec.decoder.rope ? 1 : 0;
    case ModelKey::tied: return spec.decoder.tied ? 1 : 0;
    case ModelKey::bias: return num(spec.decoder.bias);
    case ModelKey::dropout: return spec.decoder.dropout ? 1 : 0;
    case ModelKey::attention: return num(spec.decoder.attention);
    case ModelKey::checkpoint: return o.checkpoint ? 1 : 0;
    case ModelKey::lora: return spec.decoder.lora;
    case ModelKey::lora_targets: return spec.decoder.lora_all ? 1 : 0;
    case ModelKey::qlora: return spec.decoder.nf4 ? spec.decoder.lora : 0;
    case ModelKey::zero: return num(o.sharding);
    case ModelKey::world: return o.world;
    case ModelKey::fsdp: return o.sharding == Sharding::fsdp ? o.world : 0;
  }
  return 0;
}

// What a key is, in messages: "batch", "precision".
std::string_view key_name(ModelKey key) {
  switch (key) {
    case ModelKey::precision: return "precision";
    case ModelKey::optimizer: return "optimizer";
    case ModelKey::sequence: return "sequence length";
    case ModelKey::accumulation: return "accumulation";
    case ModelKey::steps: return "steps";
    case ModelKey::mode: return "mode";
    case ModelKey::fused: return "fused optimizer";
    case ModelKey::keepgrad: return "gradient zeroing";
    case ModelKey::workspace: return "workspace";
    case ModelKey::framework: return "framework";
    case ModelKey::runtime: return "runtime allocations";
    case ModelKey::benchmark: return "cuDNN benchmark";
    case ModelKey::base: return "frozen parameters' dtype";
    case ModelKey::ddp: return "data parallel";
    case ModelKey::batch: return "batch";
    case ModelKey::prefill: return "prompt length";
    case ModelKey::decode: return "decode steps";
    case ModelKey::cache: return "KV cache";
    case ModelKey::block: return "block size";
    case ModelKey::lengths: return "sequence lengths";
    case ModelKey::seed: return "seed";
    case ModelKey::packing: return "packing";
    case ModelKey::layers: return "layers";
    case ModelKey::d_model: return "d_model";
    case ModelKey::heads: return "heads";
    case ModelKey::kv_heads: return "kv_heads";
    case ModelKey::d_ff: return "d_ff";
    case ModelKey::vocab: return "vocab";
    case ModelKey::positions: return "positions";
    case ModelKey::norm: return "norm";
    case ModelKey::ffn: return "ffn";
    case ModelKey::rope: return "positional encoding";
    case ModelKey::tied: return "LM head tying";
    case ModelKey::bias: return "bias";
    case ModelKey::dropout: return "dropout";
    case ModelKey::attention: return "attention";
    case ModelKey::checkpoint: return "checkpointing";
    case ModelKey::lora: return "LoRA rank";
    case ModelKey::lora_targets: return "LoRA targets";
    case ModelKey::qlora: return "QLoRA rank";
    case ModelKey::zero: return "ZeRO stage";
    case ModelKey::world: return "world";
    case ModelKey::fsdp: return "FSDP";
  }
  return "";
}

// A token's value, with what its messages quote: the token as the user wrote it, and the spec.
struct TokenValue {
  std::int64_t value;
  std::string_view written;
  std::string_view spec_text;

  [[noreturn]] void out_of_range(const std::string& why = "") const {
    throw Error("workload " + std::string(spec_text) + ": '" + std::string(written) + "' is out of range" + why);
  }
  std::int64_t positive() const {
    if (value < 1 || value > kMaxToken) out_of_range();
    return value;
  }
  std::int64_t dimension() const {
    if (value < 1 || value > kMaxDimension) out_of_range();
    return value;
  }
};

// sN: a decoder's is checked against positions= once the whole spec is read; another
// model's against the longest sequence it takes.
void apply_sequence(ModelSpec& spec, const TokenValue& v) {
  const ZooModel& model = *spec.model;
  if (!model.takes_sequence()) {
    throw Error("workload " + std::string(v.spec_text) + ": " + std::string(model.name) +
                " takes no sequence length ('" + std::string(v.written) + "')");
  }
  if (model.is_decoder()) {
    spec.sequence = v.positive();
    return;
  }
  if (v.value < 1 || v.value > model.max_sequence) {
    v.out_of_range("; " + std::string(model.name) + " takes 1 to " + std::to_string(model.max_sequence) + " tokens");
  }
  spec.sequence = v.value;
}

void apply_lengths(ModelSpec& spec, const TokenValue& v) {
  const auto [min, max] = decode_length_range(v.value);
  if (min < 1 || max > kMaxToken || min > max) {
    v.out_of_range("; len=MIN:MAX takes 1 <= MIN <= MAX <= " + std::to_string(kMaxToken));
  }
  spec.lengths.min = min;
  spec.lengths.max = max;
}

// `written` is the token as the user wrote it, for messages.
void apply(ModelSpec& spec, const ModelToken& token, std::int64_t value, std::string_view written,
           std::string_view spec_text) {
  if (!token.spelled) return;
  if (!token.numbered) value = token.value;
  const TokenValue v{value, written, spec_text};
  if (decoder_key(token.key) && !spec.model->is_decoder()) {
    throw Error("workload " + std::string(spec_text) + ": '" + std::string(written) + "' is a decoder's; " +
                std::string(spec.model->name) + " is not one (decoder, llama2_7b, gpt2, gpt2_medium... are)");
  }
  LoweringOptions& o = spec.options;
  DecoderConfig& d = spec.decoder;
  switch (token.key) {
    case ModelKey::batch: o.batch = v.positive(); break;
    case ModelKey::accumulation: o.accumulation = static_cast<int>(v.positive()); break;
    case ModelKey::steps: o.steps = static_cast<int>(v.positive()); break;
    case ModelKey::sequence: apply_sequence(spec, v); break;
    case ModelKey::precision: o.precision = static_cast<Precision>(value); break;
    case ModelKey::optimizer: o.optimizer = static_cast<Optimizer>(value); break;
    case ModelKey::mode: o.training = value != 0; break;
    case ModelKey::fused:
      o.fused = value == 1;
      o.for_loop = value == 2;
      break;
    case ModelKey::keepgrad: o.set_to_none = value == 0; break;
    case ModelKey::workspace: o.workspace = value != 0; break;
    case ModelKey::framework: o.framework = static_cast<Framework>(value); break;
    case ModelKey::runtime: o.runtime = value != 0; break;
    case ModelKey::benchmark: o.benchmark = value != 0; break;
    case ModelKey::base: o.fp32_base = value != 0; break;
    case ModelKey::ddp: o.ddp_bucket_mib = v.positive(); break;
    case ModelKey::layers: d.layers = v.dimension(); break;
    case ModelKey::d_model: d.d_model = v.dimension(); break;
    case ModelKey::heads: d.heads = v.dimension(); break;
    case ModelKey::kv_heads: d.kv_heads = v.dimension(); break;
    case ModelKey::d_ff: d.d_ff = v.dimension(); break;
    case ModelKey::vocab: d.vocab = v.dimension(); break;
    case ModelKey::positions: d.positions = v.dimension(); break;
    case ModelKey::norm: d.norm = static_cast<Norm>(value); break;
    case ModelKey::ffn: d.ffn = static_cast<Ffn>(value); break;
    case ModelKey::rope: d.rope = value != 0; break;
    case ModelKey::tied: d.tied = value != 0; break;
    case ModelKey::bias: d.bias = static_cast<Bias>(value); break;
    case ModelKey::dropout: d.dropout = value != 0; break;
    case ModelKey::attention: d.attention = static_cast<Attention>(value); break;
    case ModelKey::checkpoint: o.checkpoint = value != 0; break;
    case ModelKey::lora: d.lora = v.dimension(); break;
    case ModelKey::lora_targets: d.lora_all = value != 0; break;
    case ModelKey::qlora:
      d.lora = v.dimension();
      d.nf4 = true;
      break;
    case ModelKey::zero: o.sharding = static_cast<Sharding>(value); break;
    case ModelKey::world: o.world = v.positive(); break;
    case ModelKey::fsdp:
      v.positive();
      o.sharding = Sharding::fsdp;
      o.world = value;
      break;
    case ModelKey::prefill: spec.generation.prefill = v.positive(); break;
    case ModelKey::decode: spec.generation.decode = v.positive(); break;
    case ModelKey::cache: spec.generation.cache = static_cast<KvCacheKind>(value); break;
    case ModelKey::block: spec.generation.block = v.positive(); break;
    case ModelKey::lengths: apply_lengths(spec, v); break;
    case ModelKey::seed:
      if (value < 0) v.out_of_range();
      spec.lengths.seed = static_cast<std::uint64_t>(value);
      break;
    case ModelKey::packing: spec.lengths.packed = value != 0; break;
  }
  spec.given |= std::uint64_t{1} << static_cast<unsigned>(token.key);
}

}  // namespace

std::span<const ModelToken> model_tokens() { return kTokens; }

const ModelToken& model_token(std::string_view word) {
  for (const ModelToken& token : kTokens) {
    if (token.word == word) return token;
  }
  throw Error("no model token '" + std::string(word) + "'; valid tokens: " + model_spec_tokens());
}

std::string spell(const ModelToken& token, std::int64_t value) {
  if (token.range) return std::string(token.word) + spell_length_range(value);
  return token.numbered ? std::string(token.word) + std::to_string(value) : std::string(token.word);
}

void set_model_token(ModelSpec& spec, const ModelToken& token, std::int64_t value, std::string_view spec_text) {
  apply(spec, token, value, spell(token, value), spec_text);
}

std::string model_spec_tokens() {
  std::string text;
  for (const ModelToken& token : kTokens) {
    if (!token.spelled) continue;
    if (!text.empty()) text += ", ";
    text += std::string(token.word) + (token.range ? "MIN:MAX" : token.numbered ? "N" : "") + " (" + std::string(token.help) + ")";
  }
  return text;
}

namespace {

// The row a token as written is, with its number; Error listing the valid ones.
std::pair<const ModelToken*, std::int64_t> find_token(std::string_view written, std::string_view text) {
  for (const ModelToken& token : kTokens) {
    if (!token.spelled) continue;
    if (token.range) {
      if (const auto value = length_range(written, token.word)) return {&token, *value};
    } else if (token.numbered) {
      if (const auto number = numbered(written, token.word)) return {&token, *number};
    } else if (written == token.word) {
      return {&token, 0};
    }
  }
  throw Error("workload " + std::string(text) + ": unknown token '" + std::string(written) +
              "'; valid tokens: " + model_spec_tokens());
}

}  // namespace

std::optional<ModelSpec> parse_model_spec(std::string_view text) {
  const ZooModel* model = nullptr;
  for (const ZooModel& candidate : zoo()) {  // the longest name wins: seed_cnn_dw over seed_cnn
    const bool prefix = text.starts_with(candidate.name) &&
                        (text.size() == candidate.name.size() || text[candidate.name.size()] == '_' ||
                         text[candidate.name.size()] == ':');
    if (prefix && (!model || candidate.name.size() > model->name.size())) model = &candidate;
  }
  if (!model) return std::nullopt;
  ModelSpec spec{model, LoweringOptions{}, model->default_sequence};
  if (model->decoder) spec.decoder = *model->decoder;
  std::array<std::string_view, kModelKeys> written_for{};  // the token that set each key, for a conflict
  const auto take = [&](std::string_view written) {
    if (written.empty()) throw Error("workload " + std::string(text) + ": empty token");
    const auto [found, value] = find_token(written, text);
    const ModelKey slot = found->key == ModelKey::qlora ? ModelKey::lora : found->key;  // one rank: lora or qlora
    std::string_view& earlier = written_for[static_cast<std::size_t>(slot)];
    if (!earlier.empty()) {
      throw Error("workload " + std::string(text) + ": '" + std::string(earlier) + "' and '" + std::string(written) +
                  "' both set the " + std::string(key_name(slot)) + "; give one");
    }
    earlier = written;
    apply(spec, *found, value, written, text);
  };
  std::string_view rest = text.substr(model->name.size());
  const std::size_t colon = rest.find(':');
  std::string_view listed = colon == std::string_view::npos ? std::string_view{} : rest.substr(colon + 1);
  rest = rest.substr(0, colon);
  while (!rest.empty()) {
    rest.remove_prefix(1);  // the '_'
    const std::string_view written = rest.substr(0, rest.find('_'));
    take(written);
    rest.remove_prefix(written.size());
  }
  if (colon != std::string_view::npos) {
    while (true) {
      const std::size_t comma = listed.find(',');
      take(listed.substr(0, comma));
      if (comma == std::string_view::npos) break;
      listed.remove_prefix(comma + 1);
    }
  }
  check_model_spec(spec, text);
  return spec;
}

void check_model_spec(const ModelSpec& spec, std::string_view text) {
  const auto fail = [&](const std::string& why) { throw Error("workload " + std::string(text) + ": " + why); };
  if (spec.names(ModelKey::lora) && spec.names(ModelKey::qlora)) fail("lora= and qlora= both set the lora rank; give one");
  if (spec.names(ModelKey::fsdp) && (spec.names(ModelKey::zero) || spec.names(ModelKey::world))) {
    fail("fsdp=N gives the ranks itself; give fsdp=N or zero=S,world=N");
  }
  if (spec.names(ModelKey::zero) != spec.names(ModelKey::world)) fail("zero=S and world=N come together");
  if (spec.options.sharding != Sharding::none && spec.decoder.lora > 0) {
    fail("zero and fsdp with lora or qlora (frozen parameters) are not modelled");
  }
  if (spec.options.fp32_base && spec.generation.given()) {
    fail("fp32base: a generation loads its weights in the compute dtype (from_pretrained(torch_dtype=...)); "
         "fp32 weights under autocast are not modelled there");
  }
  if (!spec.model->is_decoder()) return;
  if (const std::string problem = spec.decoder.problem(); !problem.empty()) fail(problem);
  const std::int64_t positions = spec.decoder.positions;
  if (positions > 0 && spec.sequence > positions) {
    fail("a sequence of " + std::to_string(spec.sequence) + " tokens; positions is " + std::to_string(positions));
  }
}

std::string to_string(const ModelSpec& spec) {
  std::string text(spec.model->name);
  bool listing = false;
  for (std::size_t k = 0; k < kModelKeys; ++k) {
    const auto key = static_cast<ModelKey>(k);
    if (!spec.names(key)) continue;
    const std::int64_t value = get(spec, key);
    for (const ModelToken& token : kTokens) {  // the first row that spells the value: amp, not fp16
      if (token.key != key || !token.spelled || (!token.numbered && token.value != value)) continue;
      text += !decoder_key(key) ? '_' : listing ? ',' : ':';
      listing = listing || decoder_key(key);
      text += spell(token, value);
      break;
    }
  }
  return text;
}

}  // namespace allocsim
