// The spec grammar for zoo workloads: MODEL[_token...], e.g. resnet50_b64,
// resnet50_b256_amp, resnet50_b32_adam_acc4_steps3, seed_cnn_dw_b8_infer,
// bert_base_s512_b8, gpt2_s1024_b4_acc4, bert_large_adamw_steps1 (the first step alone).
//
// Every token is one row of model_tokens(): the parser, the help text and the sweep's
// model axes (--batch, --precision, ...) all read that table. Adding a token is a row
// there and a case in the key's setter.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "workloads/model/generation.hpp"
#include "workloads/model/lower.hpp"
#include "workloads/model/sequence_lengths.hpp"
#include "workloads/model/zoo.hpp"

namespace allocsim {

// What a token sets. The order is the canonical spelling's: to_string writes the keys a
// spec names in this order, batch last (the order the sweep has always appended them).
// Keys from `layers` on are a decoder's (decoder.hpp) and are written after a ':', comma
// separated: llama2_7b_s2048_b1:attn=eager, decoder_b4:layers=24,d_model=1024,...
enum class ModelKey : std::uint8_t {
  precision, optimizer, sequence, accumulation, steps, mode, fused, keepgrad, workspace, framework, runtime, benchmark,
  base, ddp, prefill, decode, batch,
  layers, d_model, heads, kv_heads, d_ff, vocab, positions, norm, ffn, rope, tied, bias, dropout, attention, checkpoint,
  lora, lora_targets, qlora, zero, world, fsdp,
  cache, block, lengths, seed, packing  // generation.hpp, sequence_lengths.hpp
};
constexpr std::size_t kModelKeys = static_cast<std::size_t>(ModelKey::packing) + 1;
static_assert(kModelKeys <= 64, "ModelSpec::given holds a bit per key");
constexpr ModelKey kFirstListedKey = ModelKey::layers;  // this key and later ones go after the ':'

struct ModelToken {
  std::string_view word;   // the token, or the prefix of a numbered one ("b" of b64)
  bool numbered;           // word + digits: the number is the value
  ModelKey key;            // one token per key in a spec: two (b64_b128, amp_fp32) are an error
  std::int64_t value;      // what a plain word sets its key to (an enum or a flag as a number)
  std::string_view help;
  std::string_view axis;   // the sweep option over this key's values ("batch"), or ""
  bool spelled = true;     // false: a sweep word only, for the key's default ("train"); it sets nothing
  bool range = false;      // numbered with a range: word + N or N:M (len=8:64), the value encode_length_range's
};

std::span<const ModelToken> model_tokens();

// The row of a word or numbered prefix ("amp", "b"); Error when there is none.
const ModelToken& model_token(std::string_view word);

struct ModelSpec {
  const ZooModel* model;
  LoweringOptions options;
  std::int64_t sequence = 0;  // tokens per sample (sN); the model's default when not given
  // The keys the spelling names, a bit per ModelKey, defaults included: resnet50_fp32_b32
  // is not resnet50 when printed, though both lower to the same trace.
  std::uint64_t given = 0;
  DecoderConfig decoder{};  // a decoder's configuration: its preset's, with the spec's keys applied
  GenerationOptions generation{};  // infer_prefillP_decodeT: a generation with a KV cache
  VariableLengths lengths{};       // len=min:max, seed=N, packed

  Model build() const {
    return model->is_decoder() ? build_decoder(decoder, sequence, std::string(model->name)) : model->build(sequence);
  }
  bool names(ModelKey key) const { return (given >> static_cast<unsigned>(key)) & 1u; }
  friend bool operator==(const ModelSpec&, const ModelSpec&) = default;
};

// nullopt when the text names no zoo model; Error on a token it does not know, listing
// the valid ones, and on two tokens of one key (resnet50_b64_b128, _amp_fp32, _fp16_amp).
// After a ':' come comma-separated tokens, the decoder's keys (layers=24, attn=flash, rope)
// and any of the others (b4): MODEL[_token...][:token,...].
std::optional<ModelSpec> parse_model_spec(std::string_view text);

// The combinations of keys the lowering models, checked as parse_model_spec checks a
// spelling: Error naming `spec_text` (ZeRO without world=, LoRA with sharding, a lora= and a
// qlora= both, a decoder configuration with a problem, a sequence past the position table).
// For a spec edited token by token (set_model_token checks each token alone).
void check_model_spec(const ModelSpec& spec, std::string_view spec_text);

// Sets what `token` sets (`value` for a numbered token, else the row's own), checked as the
// parser checks it, replacing what the spec had for that key (a sweep's axes, --batch).
// `spec_text` names the spec in errors, which quote the token as spelled.
void set_model_token(ModelSpec& spec, const ModelToken& token, std::int64_t value, std::string_view spec_text);

// The token as written: "b64", "amp".
std::string spell(const ModelToken& token, std::int64_t value);

// The canonical spelling: the model, then each key the spec names, in ModelKey order.
// Contract: parse_model_spec(to_string(s)) == s; to_string(*parse_model_spec(t)) is t with
// its keys in that order, fp16 spelled amp.
std::string to_string(const ModelSpec& spec);

// One line for help texts: every token and what it does, from model_tokens().
std::string model_spec_tokens();

}  // namespace allocsim
