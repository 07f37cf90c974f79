#include "workloads/model/model_spec.hpp"

#include <charconv>

#include "sim/error.hpp"

namespace allocsim {
namespace {

constexpr std::string_view kTokens =
    "bN (batch per step, default 32), sN (tokens per sample, transformers only: default 128 for bert, 1024 "
    "for gpt2), fp32 | amp | bf16, sgd | momentum | adam | adamw, fused, "
    "keepgrad (zero_grad without set_to_none), accN (micro-batches per step), stepsN, infer, nows (no cuDNN workspace), torch | tf (framework style)";

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

void apply(ModelSpec& model_spec, std::string_view token, std::string_view spec) {
  LoweringOptions& options = model_spec.options;
  const auto positive = [&](std::int64_t value) {
    if (value < 1 || value > kMaxToken) {
      throw Error("workload " + std::string(spec) + ": '" + std::string(token) + "' is out of range");
    }
    return value;
  };
  if (auto batch = numbered(token, "b")) {
    options.batch = positive(*batch);
  } else if (auto acc = numbered(token, "acc")) {
    options.accumulation = static_cast<int>(positive(*acc));
  } else if (auto steps = numbered(token, "steps")) {
    options.steps = static_cast<int>(positive(*steps));
  } else if (auto sequence = numbered(token, "s")) {
    const ZooModel& model = *model_spec.model;
    if (!model.takes_sequence()) {
      throw Error("workload " + std::string(spec) + ": " + std::string(model.name) +
                  " takes no sequence length ('" + std::string(token) + "')");
    }
    if (*sequence < 1 || *sequence > model.max_sequence) {
      throw Error("workload " + std::string(spec) + ": '" + std::string(token) + "' is out of range; " +
                  std::string(model.name) + " takes 1 to " + std::to_string(model.max_sequence) + " tokens");
    }
    model_spec.sequence = *sequence;
  } else if (token == "fp32") {
    options.precision = Precision::fp32;
  } else if (token == "amp" || token == "fp16") {
    options.precision = Precision::amp;
  } else if (token == "bf16") {
    options.precision = Precision::bf16;
  } else if (token == "sgd") {
    options.optimizer = Optimizer::sgd;
  } else if (token == "momentum") {
    options.optimizer = Optimizer::momentum;
  } else if (token == "adam") {
    options.optimizer = Optimizer::adam;
  } else if (token == "adamw") {
    options.optimizer = Optimizer::adamw;
  } else if (token == "fused") {
    options.fused = true;
  } else if (token == "keepgrad") {
    options.set_to_none = false;
  } else if (token == "infer") {
    options.training = false;
  } else if (token == "tf") {
    options.framework = Framework::tf;
  } else if (token == "torch") {
    options.framework = Framework::torch;
  } else if (token == "nows") {
    options.workspace = false;
  } else {
    throw Error("workload " + std::string(spec) + ": unknown token '" + std::string(token) +
                "'; valid tokens: " + std::string(kTokens));
  }
}

}  // namespace

std::string model_spec_tokens() { return std::string(kTokens); }

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
  while (!rest.empty()) {
    rest.remove_prefix(1);  // the '_'
    const std::string_view token = rest.substr(0, rest.find('_'));
    if (token.empty()) throw Error("workload " + std::string(text) + ": empty token");
    apply(spec, token, text);
    rest.remove_prefix(token.size());
  }
  return spec;
}

}  // namespace allocsim
