// The optimizer's step: its state, made in the first step, and the temporaries of its
// update (foreach, for-loop or fused kernels; bitsandbytes' 8-bit and paged AdamW).
#include <map>
#include <optional>
#include <vector>

#include "workloads/model/bitsandbytes.hpp"
#include "workloads/model/lowering.hpp"

namespace allocsim::lowering {

// What the optimizer updates: each trainable parameter, or a sharded rank's shards.
std::vector<Lowering::OptimizerTensor> Lowering::optimizer_tensors() {
  if (rank_) return rank_->optimizer_tensors();
  std::vector<OptimizerTensor> tensors;
  std::map<Node, std::size_t> seen;
  for (const auto& [node, weight] : weights_) {
    (void)weight;
    const std::int64_t elements = op(node).params[seen[node]++];
    if (!op(node).frozen) tensors.push_back(OptimizerTensor{op(node).name, elements, 0});  // frozen: no state
  }
  return tensors;
}

// bitsandbytes' Optimizer2State.init_state: state1 and state2 (uint8 with an fp32 absmax
// each for 8-bit, fp32 for 32-bit or a tensor below min_8bit_size); the dynamic maps come
// to the device with the first 8-bit tensor. Paged state of a large tensor is unified
// memory, which PyTorch's allocator never sees.
void Lowering::bnb_adam_init(const OptimizerTensor& tensor) {
  const Optimizer o = options_.optimizer;
  const bool eight_bit = o == Optimizer::adamw8bit || o == Optimizer::paged_adamw8bit;
  const bool paged = o == Optimizer::paged_adamw8bit || o == Optimizer::paged_adamw32bit;
  const OptimizerStateLayout layout = bnb_adam_state(tensor.elements, eight_bit, paged);
  if (layout.absmax > 0 && !optimizer_maps_) {
    alloc(kDynamicMapBytes, Tag::optimizer, "bitsandbytes.qmap1");
    alloc(kDynamicMapBytes, Tag::optimizer, "bitsandbytes.qmap2");
    optimizer_maps_ = true;
  }
  for (int state = 0; state < 2; ++state) {
    if (!layout.paged) alloc(layout.state, Tag::optimizer, tensor.name);
  }
  for (int state = 0; state < 2 && layout.absmax > 0; ++state) alloc(layout.absmax, Tag::optimizer, tensor.name);
}

void Lowering::optimizer_step(int step) {
  std::vector<AllocId> temporaries;
  const bool amp = options_.precision != Precision::fp32;
  AllocId found_inf{};
  if (amp) {
    if (step == 0) alloc(4, Tag::optimizer, "grad_scaler");  // the scale, kept
    found_inf = alloc(4, Tag::temp, "grad_scaler");
  }
  for (const OptimizerTensor& tensor : optimizer_tensors()) {
    const Bytes bytes = static_cast<Bytes>(tensor.elements) * 4;
    const std::string& name = tensor.name;
    const std::optional<AllocId> upcast =
        tensor.upcast_grad > 0 ? std::optional(alloc(tensor.upcast_grad, Tag::temp, name)) : std::nullopt;
    switch (options_.optimizer) {
      case Optimizer::sgd:
        break;
      case Optimizer::momentum:
        if (step == 0) alloc(bytes, Tag::optimizer, name);  // momentum_buffer = grad.clone()
        break;
      case Optimizer::adam:
      case Optimizer::adamw:
        if (step == 0) {  // exp_avg, exp_avg_sq
          alloc(bytes, Tag::optimizer, name);
          alloc(bytes, Tag::optimizer, name);
        }
        if (options_.fused || tf_) break;
        if (options_.for_loop) {  // _single_tensor_adam: denom = (exp_avg_sq.sqrt() / bc2_sqrt).add_(eps)
          const AllocId root = alloc(bytes, Tag::temp, name);
          const AllocId denom = alloc(bytes, Tag::temp, name);
          free(root);
          free(denom);  // after param.addcdiv_(exp_avg, denom)
        } else {
          temporaries.push_back(alloc(bytes, Tag::temp, name));  // _foreach_sqrt, for every parameter at once
        }
        break;
      case Optimizer::adamw8bit:
      case Optimizer::adamw32bit:
      case Optimizer::paged_adamw8bit:
      case Optimizer::paged_adamw32bit:
        if (step == 0) bnb_adam_init(tensor);
        break;  // one fused kernel per parameter, in place
    }
    if (upcast) free(*upcast);
  }
  for (const AllocId temporary : temporaries) free(temporary);
  if (amp) free(found_inf);
  if (tf_) {  // apply_gradients has consumed the tape's gradients
    for (auto& grad : grads_) {
      if (grad) free(*grad);
      grad.reset();
    }
  }
}

}  // namespace allocsim::lowering
