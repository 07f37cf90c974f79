// The spec grammar for zoo workloads: MODEL[_token...], e.g. resnet50_b64,
// resnet50_b256_amp, resnet50_b32_adam_acc4_steps2, seed_cnn_dw_b8_infer,
// bert_base_s512_b8, gpt2_s1024_b4_acc4.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "workloads/model/lower.hpp"
#include "workloads/model/zoo.hpp"

namespace allocsim {

struct ModelSpec {
  const ZooModel* model;
  LoweringOptions options;
  std::int64_t sequence = 0;  // tokens per sample (sN); the model's default when not given

  Model build() const { return model->build(sequence); }
};

// nullopt when the text names no zoo model; Error on a token it does not know, listing
// the valid ones.
std::optional<ModelSpec> parse_model_spec(std::string_view text);

// One line for help texts: every token and what it does.
std::string model_spec_tokens();

}  // namespace allocsim
