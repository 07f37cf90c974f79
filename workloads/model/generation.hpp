// Inference with a KV cache: MODEL_infer_prefillP_decodeT_bB[:cache=dynamic|static|paged,
// block=16,len=min:max,seed=N], lowered as Hugging Face transformers' generate() runs a
// decoder (greedy search, use_cache=True) and vLLM keeps its paged cache:
// - the weights in the compute dtype (fp32, fp16 for amp/fp16, bf16), no gradients, no
//   optimizer: the model loaded with torch_dtype and run under no_grad;
// - step 1, the prefill: one forward of the B x P prompt; every op's output freed after
//   its last reader, layer by layer (nothing is saved for backward);
// - steps 2..T+1: one forward of one token per sequence each, reading the cache;
// - the LM head on the last position only (logits_to_keep=1: B x 1 x vocab), then
//   generate's fp32 copy of those logits and the argmax; input_ids and the attention mask
//   grow by one column per step (torch.cat, the old freed).
// The caches (kv_cache.hpp) differ in how the keys and values of each layer are held.
// `len=min:max` draws how many of the T decode steps each sequence runs before it ends
// (its EOS); generate keeps finished rows in the batch (it pads them) and stops when every
// sequence has ended, so dynamic and static caches keep the batch's shape; paged frees a
// finished sequence's blocks and decodes the rest (vLLM's scheduler).
#pragma once

#include <cstdint>
#include <string>

#include "sim/trace.hpp"
#include "workloads/model/decoder.hpp"
#include "workloads/model/lower.hpp"
#include "workloads/model/sequence_lengths.hpp"

namespace allocsim {

enum class KvCacheKind : std::uint8_t { dynamic, fixed, paged };  // fixed: cache=static (StaticCache)

struct GenerationOptions {
  std::int64_t prefill = 0;  // prompt tokens per sequence; 0: not a generation
  std::int64_t decode = 0;   // decode steps (one token each) after the prefill
  KvCacheKind cache = KvCacheKind::dynamic;
  std::int64_t block = 16;   // cache=paged: tokens per block (vLLM's block_size)

  bool given() const { return prefill > 0 || decode > 0; }
  friend bool operator==(const GenerationOptions&, const GenerationOptions&) = default;
};

// Uses of `options`: precision (the weights' dtype), batch, runtime (the cuBLAS workspace
// of the one handle inference uses) and compute_capability; the rest must be defaults
// (the caller checks). `lengths`: each sequence's decode steps when given, else all T.
Trace lower_generation(const DecoderConfig& config, const LoweringOptions& options, const GenerationOptions& generation,
                       const VariableLengths& lengths, std::string name);

}  // namespace allocsim
