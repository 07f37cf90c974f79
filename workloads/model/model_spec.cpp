#include "workloads/model/model_spec.hpp"

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
    ModelToken{"ddp", false, ModelKey::ddp, 25,
               "DistributedDataParallel: NCCL buffers (an estimate, 16 MiB), the weights broadcast, gradient buckets "
               "of bucket_cap_mb=25 (1 MiB first)",
               ""},
    ModelToken{"ddp", true, ModelKey::ddp, 0, "the same with bucket_cap_mb=N", ""},
};

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

std::int64_t get(const ModelSpec& spec, ModelKey key) {
  const LoweringOptions& o = spec.options;
  switch (key) {
    case ModelKey::precision: return num(o.precision);
    case ModelKey::optimizer: return num(o.optimizer);
    case ModelKey::sequence: return spec.sequence;
    case ModelKey::accumulation: return o.accumulation;
    case ModelKey::steps: return o.steps;
    case ModelKey::mode: return o.training ? 1 : 0;
    case ModelKey::fused: return o.fused ? 1 : 0;
    case ModelKey::keepgrad: return o.set_to_none ? 0 : 1;
    case ModelKey::workspace: return o.workspace ? 1 : 0;
    case ModelKey::framework: return num(o.framework);
    case ModelKey::runtime: return o.runtime ? 1 : 0;
    case ModelKey::benchmark: return o.benchmark ? 1 : 0;
    case ModelKey::ddp: return o.ddp_bucket_mib;
    case ModelKey::batch: return o.batch;
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
    case ModelKey::ddp: return "data parallel";
    case ModelKey::batch: return "batch";
  }
  return "";
}

// `written` is the token as the user wrote it, for messages.
void apply(ModelSpec& spec, const ModelToken& token, std::int64_t value, std::string_view written,
           std::string_view spec_text) {
  if (!token.spelled) return;
  if (!token.numbered) value = token.value;
  const auto positive = [&] {
    if (value < 1 || value > kMaxToken) {
      throw Error("workload " + std::string(spec_text) + ": '" + std::string(written) + "' is out of range");
    }
  };
  LoweringOptions& o = spec.options;
  switch (token.key) {
    case ModelKey::batch: positive(); o.batch = value; break;
    case ModelKey::accumulation: positive(); o.accumulation = static_cast<int>(value); break;
    case ModelKey::steps: positive(); o.steps = static_cast<int>(value); break;
    case ModelKey::sequence: {
      const ZooModel& model = *spec.model;
      if (!model.takes_sequence()) {
        throw Error("workload " + std::string(spec_text) + ": " + std::string(model.name) + " takes no sequence length ('" +
                    std::string(written) + "')");
      }
      if (value < 1 || value > model.max_sequence) {
        throw Error("workload " + std::string(spec_text) + ": '" + std::string(written) + "' is out of range; " +
                    std::string(model.name) + " takes 1 to " + std::to_string(model.max_sequence) + " tokens");
      }
      spec.sequence = value;
      break;
    }
    case ModelKey::precision: o.precision = static_cast<Precision>(value); break;
    case ModelKey::optimizer: o.optimizer = static_cast<Optimizer>(value); break;
    case ModelKey::mode: o.training = value != 0; break;
    case ModelKey::fused: o.fused = value != 0; break;
    case ModelKey::keepgrad: o.set_to_none = value == 0; break;
    case ModelKey::workspace: o.workspace = value != 0; break;
    case ModelKey::framework: o.framework = static_cast<Framework>(value); break;
    case ModelKey::runtime: o.runtime = value != 0; break;
    case ModelKey::benchmark: o.benchmark = value != 0; break;
    case ModelKey::ddp: positive(); o.ddp_bucket_mib = value; break;
  }
  spec.given |= 1u << static_cast<unsigned>(token.key);
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
    text += std::string(token.word) + (token.numbered ? "N" : "") + " (" + std::string(token.help) + ")";
  }
  return text;
}

std::optional<ModelSpec> parse_model_spec(std::string_view text) {
  const ZooModel* model = nullptr;
  for (const ZooModel& candidate : zoo()) {  // the longest name wins: seed_cnn_dw over seed_cnn
    const bool prefix = text.starts_with(candidate.name) &&
                        (text.size() == candidate.name.size() || text[candidate.name.size()] == '_');
    if (prefix && (!model || candidate.name.size() > model->name.size())) model = &candidate;
  }
  if (!model) return std::nullopt;
  ModelSpec spec{model, LoweringOptions{}, model->default_sequence};
  std::string_view rest = text.substr(model->name.size());
  std::array<std::string_view, kModelKeys> written_for{};  // the token that set each key, for a conflict
  while (!rest.empty()) {
    rest.remove_prefix(1);  // the '_'
    const std::string_view written = rest.substr(0, rest.find('_'));
    if (written.empty()) throw Error("workload " + std::string(text) + ": empty token");
    const ModelToken* found = nullptr;
    std::int64_t value = 0;
    for (const ModelToken& token : kTokens) {
      if (!token.spelled) continue;
      if (token.numbered) {
        if (const auto number = numbered(written, token.word)) {
          found = &token;
          value = *number;
          break;
        }
      } else if (written == token.word) {
        found = &token;
        break;
      }
    }
    if (!found) {
      throw Error("workload " + std::string(text) + ": unknown token '" + std::string(written) +
                  "'; valid tokens: " + model_spec_tokens());
    }
    std::string_view& earlier = written_for[static_cast<std::size_t>(found->key)];
    if (!earlier.empty()) {
      throw Error("workload " + std::string(text) + ": '" + std::string(earlier) + "' and '" + std::string(written) +
                  "' both set the " + std::string(key_name(found->key)) + "; give one");
    }
    earlier = written;
    apply(spec, *found, value, written, text);
    rest.remove_prefix(written.size());
  }
  return spec;
}

std::string to_string(const ModelSpec& spec) {
  std::string text(spec.model->name);
  for (std::size_t k = 0; k < kModelKeys; ++k) {
    const auto key = static_cast<ModelKey>(k);
    if (!spec.names(key)) continue;
    const std::int64_t value = get(spec, key);
    for (const ModelToken& token : kTokens) {  // the first row that spells the value: amp, not fp16
      if (token.key != key || !token.spelled || (!token.numbered && token.value != value)) continue;
      text += '_';
      text += spell(token, value);
      break;
    }
  }
  return text;
}

}  // namespace allocsim
