// The device tensors bitsandbytes makes, by size: a linear weight quantized to 4-bit NF4
// (QLoRA's base, bitsandbytes/functional.py quantize_4bit with compress_statistics, as
// transformers' BitsAndBytesConfig(bnb_4bit_quant_type="nf4", bnb_4bit_use_double_quant=True)
// asks), and the state of its 8-bit and 32-bit AdamW (bitsandbytes/optim/optimizer.py).
//
// NF4 with double quantisation, for a weight of n elements:
// - the packed weight, two 4-bit codes a byte: (n + 1) / 2 bytes (uint8 quant_storage);
// - absmax per block of 64 values, ceil(n / 64) of them, quantised again to 8 bits (one
//   byte each) in blocks of 256 with an fp32 absmax per second-level block, ceil(blocks / 256)
//   x 4 bytes, after subtracting their mean, the offset (one fp32 scalar);
// - the 16-value NF4 code, fp32 (64 B), one per weight (get_4bit_type makes a tensor each call);
// - the 8-bit dynamic map of the second level, 256 fp32 (1 KiB), made once per process
//   (functional.py caches it in name2qmap).
#pragma once

#include <cstdint>

#include "sim/units.hpp"

namespace allocsim {

constexpr std::int64_t kNf4Blocksize = 64;           // quantize_4bit's default, QLoRA's
constexpr std::int64_t kNf4NestedBlocksize = 256;    // compress_statistics: quantize_blockwise(absmax, blocksize=256)
constexpr Bytes kNf4CodeBytes = 16 * 4;              // get_4bit_type("nf4"): 16 fp32
constexpr Bytes kDynamicMapBytes = 256 * 4;          // create_dynamic_map(): 256 fp32

struct Nf4Layout {
  Bytes packed = 0;         // the 4-bit codes
  Bytes absmax_fp32 = 0;    // the first-level absmax before double quantisation (a transient)
  Bytes absmax_8bit = 0;    // kept: the absmax quantised to one byte each
  Bytes absmax2 = 0;        // kept: fp32 absmax of the second level
  Bytes offset = 4;         // kept: the mean subtracted before the second level
  Bytes code = kNf4CodeBytes;  // kept

  // What one quantized weight keeps on the device (the shared dynamic map excluded).
  Bytes kept() const { return packed + absmax_8bit + absmax2 + offset + code; }
};

Nf4Layout nf4_layout(std::int64_t elements);

// bitsandbytes' 8-bit blockwise optimizers (AdamW8bit): tensors below min_8bit_size elements
// keep 32-bit state; the state of larger ones is uint8 with an fp32 absmax per 256 values.
constexpr std::int64_t kMin8bitSize = 4096;
constexpr std::int64_t kOptimizer8bitBlocksize = 256;
// Paged optimizers put the state of tensors of at least this many elements in CUDA unified
// memory (F.get_paged: cudaMallocManaged), outside PyTorch's allocator; smaller ones are
// ordinary device tensors (get_state_buffer).
constexpr std::int64_t kPagedMinElements = 100'000;

// One state tensor (exp_avg or exp_avg_sq) of a parameter of `elements`, and its absmax
// (0 for 32-bit state).
struct OptimizerStateLayout {
  Bytes state = 0;
  Bytes absmax = 0;
  bool paged = false;  // in unified memory: no allocation the framework's allocator sees
};

OptimizerStateLayout bnb_adam_state(std::int64_t elements, bool eight_bit, bool paged);

}  // namespace allocsim
