// A generic decoder-only language model, written down as its published configuration
// (Hugging Face config.json: num_hidden_layers, hidden_size, num_attention_heads,
// num_key_value_heads, intermediate_size, vocab_size, tie_word_embeddings...) and built
// op by op as transformers' LlamaForCausalLM / GPT2LMHeadModel forward() runs it.
//
// The presets (llama2_7b, llama3_8b, mistral_7b, tinyllama_1b, qwen2_5_0_5b, gpt2,
// gpt2_medium, gpt2_large, gpt2_xl) are rows of zoo.cpp holding one of these; `decoder:` takes every
// field from its spec (model_spec.hpp).
#pragma once

#include <cstdint>
#include <string>

#include "workloads/model/graph.hpp"

namespace allocsim {

enum class Norm : std::uint8_t { rmsnorm, layernorm };
enum class Ffn : std::uint8_t { swiglu, gelu };  // gelu: GPT-2's gelu_new MLP, c_fc then c_proj
enum class Bias : std::uint8_t { none, qkv, all };  // qkv: Qwen2's q, k, v projections only
// eager: the B x heads x S x S scores and probabilities in memory; flash: SDPA's flash or
// memory-efficient kernel (q, k, v, the output and an fp32 log-sum-exp per row and head).
enum class Attention : std::uint8_t { eager, sdpa, flash };  // sdpa: what flash does (its kernel, for these shapes)

struct DecoderConfig {
  std::int64_t layers = 0;
  std::int64_t d_model = 0;
  std::int64_t heads = 0;
  std::int64_t kv_heads = 0;   // 0: as many as heads (multi-head); fewer: grouped-query
  std::int64_t d_ff = 0;
  std::int64_t vocab = 0;
  std::int64_t positions = 0;  // max_position_embeddings: the rows of a learned table without rope
  Norm norm = Norm::rmsnorm;
  Ffn ffn = Ffn::swiglu;
  Bias bias = Bias::none;
  bool rope = false;           // rotary positions; false: a learned position table (GPT-2's wpe)
  bool tied = false;           // the LM head uses the embedding's weight
  bool fused_qkv = false;      // one projection to 3 d_model, split (GPT-2's c_attn)
  bool dropout = false;        // dropout 0.1 on embeddings, probabilities and residuals (GPT-2)
  Attention attention = Attention::eager;
  // LoRA (PEFT's LoraConfig): rank r adapters, lora_A (r x in) and lora_B (out x r), beside
  // q_proj and v_proj (or every linear of the layers: q, k, v, o, gate, up, down); every other
  // parameter frozen. 0: none.
  std::int64_t lora = 0;
  bool lora_all = false;
  // QLoRA (qlora=R): LoRA as above over a base whose layer linears keep their weights in
  // bitsandbytes' NF4 with double quantisation (bitsandbytes.hpp); lm_head and the
  // embeddings stay unquantized (transformers skips the output embedding).
  bool nf4 = false;

  std::int64_t key_value_heads() const { return kv_heads > 0 ? kv_heads : heads; }
  std::int64_t head_dim() const { return heads > 0 ? d_model / heads : 0; }
  // Whether every dimension is given and they fit together; the reason when not, else "".
  const char* problem() const;
  // Parameters worked out from the configuration alone (the test checks the graph's sum).
  std::int64_t parameter_count() const;

  friend bool operator==(const DecoderConfig&, const DecoderConfig&) = default;
};

// The model's graph at `sequence` tokens per sample. Throws Error naming `name` on a
// configuration with a problem() or a sequence beyond a learned position table.
Model build_decoder(const DecoderConfig& config, std::int64_t sequence, const std::string& name);

}  // namespace allocsim
