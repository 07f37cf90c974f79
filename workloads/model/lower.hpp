// Lowering a model to the allocations and frees of training steps, the way PyTorch 2.x
// eager runs them: weights and buffers first; per step a new batch, zero_grad, forward
// (each output allocated, freed at its last use unless saved for backward), backward (in
// reverse, gradients allocated, saved tensors freed after the last node that saved them,
// weight gradients kept as .grad), then the optimizer's step. Sizes are the tensors'
// exact bytes; the allocator under test does its own rounding. A 4-bit base (qlora,
// bitsandbytes.hpp) and one rank of ZeRO or FSDP (sharding.hpp) change what those steps
// allocate for weights, gradients and state, not the steps.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "sim/framework.hpp"
#include "sim/trace.hpp"
#include "workloads/model/graph.hpp"
#include "workloads/model/sharding.hpp"

namespace allocsim {

enum class Precision : std::uint8_t { fp32, amp, bf16 };  // amp: fp16 activations, fp32 master weights
// adamw8bit, adamw32bit: bitsandbytes' AdamW8bit (uint8 blockwise state) and AdamW32bit
// (fp32 state), fused kernels without temporaries, and their paged versions (the state of
// large tensors in unified memory; bitsandbytes.hpp).
enum class Optimizer : std::uint8_t { sgd, momentum, adam, adamw, adamw8bit, adamw32bit, paged_adamw8bit, paged_adamw32bit };
// A model's Framework (sim/framework.hpp) is torch or tf. torch: PyTorch 2.x eager.
// tf: TensorFlow 2 / Keras graph mode, which differs where its kernels do: no in-place
// ops (ReLU and residual adds write new tensors), MaxPool's gradient reads its input and
// output (no int64 indices), gradients are tape outputs that apply_gradients consumes
// (freed after each step, no zero_grad), and the Keras optimizers' update kernels are
// fused (no foreach temporaries). Liveness is the same.

struct LoweringOptions {
  std::int64_t batch = 32;        // per micro-batch: a step of accN runs N of them
  Precision precision = Precision::fp32;
  Optimizer optimizer = Optimizer::momentum;
  bool fused = false;             // fused optimizer: no foreach temporaries
  bool for_loop = false;          // foreach=False: one parameter at a time (sqrt and its division)
  bool checkpoint = false;        // activation checkpointing per unit (decoder layer): ckpt
  bool set_to_none = true;        // zero_grad(set_to_none=True), PyTorch 2.x's default
  bool training = true;           // false: forward under no_grad, nothing saved
  // Under amp or bf16, parameters that get no gradient (LoRA's frozen base, every one in
  // inference) stay in fp32 with autocast casts per use (fp32base: a model loaded without
  // torch_dtype) instead of being held in the compute dtype, PyTorch's usual way to load them.
  bool fp32_base = false;
  int accumulation = 1;           // micro-batches per optimizer step
  // A training job's memory peaks from its second step on (optimizer state is made in the
  // first, kept gradients persist): the default replays the warm-up and one steady step.
  int steps = 2;
  bool workspace = true;          // cuDNN convolution workspaces
  Framework framework = Framework::torch;
  // What the framework allocates besides the model, through the same allocator (Tag::runtime;
  // workloads/model/runtime_allocations.hpp): PyTorch's cuBLAS workspaces. TensorFlow's
  // cuBLAS and cuDNN handles allocate outside its allocator, so tf traces none.
  bool runtime = true;
  bool benchmark = false;         // torch.backends.cudnn.benchmark: trial workspaces in the first step
  std::int64_t ddp_bucket_mib = 0;  // DistributedDataParallel's bucket_cap_mb; 0: no DDP
  Sharding sharding = Sharding::none;  // one rank of ZeRO or FSDP (sharding.hpp)
  std::int64_t world = 1;         // ranks the sharding spans
  int compute_capability = 90;    // of the device it runs on (the cuBLAS workspace's size); not a token

  friend bool operator==(const LoweringOptions&, const LoweringOptions&) = default;
};

Trace lower_model(const Model& model, const LoweringOptions& options, std::string name);
// The same with micro-batch i (of steps x accumulation, in order) shaped as shapes[i]: the
// graphs of one model at other sizes (a batch padded to its longest sequence), the same ops.
Trace lower_model_shapes(std::span<const Model> shapes, const LoweringOptions& options, std::string name);

// Bytes of one convolution workspace, or 0 (exposed for tests and documentation).
enum class ConvPass : std::uint8_t { forward, backward_input, backward_weight };
Bytes conv_workspace_bytes(const ModelOp& conv, Bytes input_bytes, Bytes output_bytes, ConvPass pass);

}  // namespace allocsim
