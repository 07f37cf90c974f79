// Persistent state and what belongs to parameters: the weights (4-bit ones quantized as
// they load), the batch, zero_grad, autocast's weight casts and the parameters' gradients.
#include <string>
#include <vector>

#include "workloads/model/bitsandbytes.hpp"
#include "workloads/model/lowering.hpp"

namespace allocsim::lowering {

void Lowering::allocate_weights() {
  for (const Node node : boost::make_iterator_range(boost::vertices(graph_))) {
    for (std::size_t i = 0; i < op(node).params.size(); ++i) {
      const std::int64_t elements = op(node).params[i];
      if (op(node).nf4 && i == 0) {
        weights_.push_back({node, quantize_nf4(node, elements)});
      } else if (rank_ && !rank_->replicated()) {
        weights_.push_back({node, AllocId{}});  // the rank's shards instead (allocate_parameters)
      } else {
        // ZeRO-1 and 2 keep the module whole in its compute dtype; fp32 masters are sharded.
        const Bytes bytes = rank_ || compute_dtype_params(node) ? activation_bytes_ : 4;
        weights_.push_back({node, alloc(static_cast<Bytes>(elements) * bytes, Tag::weight, op(node).name)});
      }
    }
    for (const Bytes buffer : op(node).buffers) alloc(buffer, Tag::weight, op(node).name);
    if (op(node).kind == OpKind::batchnorm) {  // running_mean, running_var, num_batches_tracked
      const Bytes channels = static_cast<Bytes>(op(node).channels());
      alloc(channels * 4, Tag::weight, op(node).name);
      alloc(channels * 4, Tag::weight, op(node).name);
      alloc(8, Tag::weight, op(node).name);
    }
  }
  if (rank_) rank_->allocate_parameters();
  grads_.assign(weights_.size(), std::nullopt);
}

// Params4bit._quantize as transformers loads a bitsandbytes 4-bit model: the checkpoint's
// weight comes to the device in the compute dtype, quantize_4bit makes the absmax (fp32),
// the packed codes and the NF4 code, then double quantisation the offset, the dynamic map
// (once), the second-level absmax and the 8-bit absmax; the fp32 absmax and the loaded
// weight go. Returns the packed weight.
AllocId Lowering::quantize_nf4(Node node, std::int64_t elements) {
  const Nf4Layout layout = nf4_layout(elements);
  const std::string& name = op(node).name;
  const AllocId loaded = alloc(static_cast<Bytes>(elements) * activation_bytes_, Tag::weight, name);
  const AllocId absmax = alloc(layout.absmax_fp32, Tag::weight, name);
  const AllocId packed = alloc(layout.packed, Tag::weight, name);
  alloc(layout.code, Tag::weight, name);
  alloc(layout.offset, Tag::weight, name);
  if (!dynamic_map_) {
    alloc(kDynamicMapBytes, Tag::weight, "bitsandbytes.dynamic_map");
    dynamic_map_ = true;
  }
  alloc(layout.absmax2, Tag::weight, name);
  alloc(layout.absmax_8bit, Tag::weight, name);
  free(absmax);
  free(loaded);
  return packed;
}

// dequantize_4bit with a nested state: the fp32 absmax dequantized (and the offset added
// in place), then the whole weight in the compute dtype; the absmax goes when it returns.
// The caller frees the weight after its matmul.
AllocId Lowering::dequantize_nf4(Node node) {
  const std::int64_t elements = op(node).params.front();
  const AllocId absmax = alloc(nf4_layout(elements).absmax_fp32, Tag::temp, op(node).name);
  const AllocId weight = alloc(static_cast<Bytes>(elements) * activation_bytes_, Tag::temp, op(node).name);
  free(absmax);
  return weight;
}

void Lowering::new_batch() {
  // The loader's next batch (every model input, then the labels) arrives before the old
  // one is released (rebinding x, y).
  std::vector<AllocId> batch;
  for (const Node input : inputs_) {
    batch.push_back(alloc(batch_bytes(op(input).elements(), op(input).element_bytes), Tag::input, op(input).name));
  }
  batch.push_back(alloc(batch_bytes(labels_, 8), Tag::input, "labels"));
  for (const AllocId old : batch_) free(old);
  batch_ = std::move(batch);
}

void Lowering::zero_grad() {
  if (!options_.set_to_none || tf_) return;
  if (rank_) rank_->zero_grad();
  for (auto& grad : grads_) {
    if (grad) free(*grad);
    grad.reset();
  }
}

// Under autocast, conv and linear cast their fp32 weights to half precision on first
// use; the casts they save for backward stay alive until that backward has run. Without
// grad in a training step (a checkpointed layer's first forward), autocast's cache of
// casts of leaves that require grad keeps them until the autocast region ends, with
// forward (cached_cast in aten/src/ATen/autocast_mode.cpp).
void Lowering::cast_weights(Node node) {
  // A sharded rank computes with parameters already in the compute dtype (gathered or kept
  // so), as does a base held in it; a 4-bit base is dequantized instead (its bias cast, a
  // few bytes, is not traced).
  if (options_.precision == Precision::fp32 || rank_ || op(node).nf4 || compute_dtype_params(parameter_owner(node))) {
    return;
  }
  for (const std::int64_t elements : params_of(node)) {
    const AllocId cast = alloc(static_cast<Bytes>(elements) * 2, Tag::weight, op(node).name);
    if (grad_mode_) {
      cast_of_[node].push_back(cast);
    } else if (options_.training) {
      cached_casts_.push_back(cast);
    } else {
      free(cast);
    }
  }
}

// The casts an op saved, freed when its backward has run.
void Lowering::free_casts(Node node) {
  for (const AllocId cast : cast_of_[node]) free(cast);
  cast_of_[node].clear();
}

// AccumulateGrad: the first gradient of a parameter becomes its .grad; later ones are
// added in place and freed.
void Lowering::parameter_grads(Node node) {
  if (!trainable(node)) return;
  const Node owner_of_params = parameter_owner(node);
  std::size_t index = 0;
  for (const auto& [owner, weight] : weights_) {
    if (owner != owner_of_params) {
      ++index;
      continue;
    }
    (void)weight;
    const std::size_t which = params_seen_[owner]++;
    const std::int64_t elements = op(owner).params[which];
    if (rank_ && rank_->shards_gradients()) {  // kept until the unit's reduce-scatter
      rank_->parameter_grad(owner, which, elements);
      ++index;
      continue;
    }
    AllocId grad{};
    if (rank_) {  // ZeRO-1: the module's own dtype
      grad = alloc(static_cast<Bytes>(elements) * activation_bytes_, Tag::gradient, op(node).name);
    } else if (options_.precision != Precision::fp32 && (op(node).kind == OpKind::conv || op(node).kind == OpKind::linear)) {
      const AllocId half = alloc(static_cast<Bytes>(elements) * 2, Tag::gradient, op(node).name);
      grad = alloc(static_cast<Bytes>(elements) * 4, Tag::gradient, op(node).name);  // back to the fp32 param
      free(half);
    } else {
      grad = alloc(static_cast<Bytes>(elements) * 4, Tag::gradient, op(node).name);
    }
    if (grads_[index]) {
      free(grad);
    } else {
      grads_[index] = grad;
    }
    ++index;
  }
  params_seen_[owner_of_params] = 0;
}

}  // namespace allocsim::lowering
