// The model zoo: torchvision's ResNets, VGG-16 and MobileNetV2, the seed article's small
// CNN and Hugging Face's BERT (base, large), each built op by op as its forward() runs,
// with the framework's layer names; and the decoder-only LMs (GPT-2 small to XL, Llama,
// Mistral, TinyLlama, Qwen2.5), presets of the one decoder (decoder.hpp).
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "workloads/model/decoder.hpp"
#include "workloads/model/graph.hpp"

namespace allocsim {

struct ZooModel {
  std::string_view name;
  std::string_view summary;
  Model (*make)(std::int64_t sequence);  // sequence: tokens per sample; the CNNs ignore it
  std::int64_t default_sequence;         // 0: the model takes no sequence length (a CNN)
  std::int64_t max_sequence;             // rows of its position table; 0: the spec's decoder says
  const DecoderConfig* decoder = nullptr;  // a decoder preset (make unused), or `decoder` with none given

  bool takes_sequence() const { return default_sequence > 0; }
  bool is_decoder() const { return decoder != nullptr; }
  Model build() const { return build(default_sequence); }
  Model build(std::int64_t sequence) const {
    return decoder ? build_decoder(*decoder, sequence, std::string(name)) : make(sequence);
  }
};

std::span<const ZooModel> zoo();
const ZooModel* find_zoo_model(std::string_view name);  // nullptr when unknown

}  // namespace allocsim
