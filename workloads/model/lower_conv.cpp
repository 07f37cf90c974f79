// Convolutions: Conv2d's forward and backward, with cuDNN's workspaces and, under
// cudnn.benchmark, its trial workspaces.
#include <algorithm>
#include <tuple>

#include "workloads/model/lowering.hpp"
#include "workloads/model/runtime_allocations.hpp"

namespace allocsim::lowering {

int Lowering::forward_conv(const OpStep& step) {
  const Node node = step.node;
  const Node input = step.inputs[0];
  cast_weights(node);
  int in = storage_of_[input];
  if (op(input).kind == OpKind::input && options_.precision != Precision::fp32) {
    in = new_storage(node, batch_bytes(op(input).elements(), 2));  // the image, cast to half
    ++storages_[in].forward_uses;
  }
  workspace(node, batch_bytes(op(input).elements(), activation_bytes_), step.out_bytes, ConvPass::forward);
  const int out = new_storage(node, step.out_bytes);
  save(in);
  if (in != storage_of_[input]) {
    --storages_[in].forward_uses;
    release_if_dead(in);  // under no_grad nothing saved the half image
  }
  saved_[node] = {in};
  return out;
}

void Lowering::backward_conv(const OpStep& step) {
  const Node node = step.node;
  const bool needs_input_grad = op(step.inputs[0]).kind != OpKind::input;
  const Bytes out_bytes = batch_bytes(step.op.elements(), activation_bytes_);
  int grad_in = kNone;
  if (needs_input_grad) {
    workspace(node, step.in_bytes, out_bytes, ConvPass::backward_input);
    grad_in = new_grad(node, step.in_bytes);
  }
  workspace(node, step.in_bytes, out_bytes, ConvPass::backward_weight);
  parameter_grads(node);
  drop(step.grad_out);
  free_casts(node);
  unsave(saved_[node][0]);
  if (needs_input_grad) contribute(step.inputs[0], grad_in);
}

// benchmark: the first step's first run of each convolution shape and pass searches its
// algorithms in one trial workspace, freed before the chosen one is made.
void Lowering::benchmark_trial(Node node, ConvPass pass) {
  if (!options_.benchmark || step_ != 0) return;
  const ModelOp& conv = op(node);
  const Node input = inputs_of(node).front();
  auto shape = std::make_tuple(static_cast<int>(pass), op(input).shape, conv.shape, conv.params.front());
  if (std::find(benchmarked_.begin(), benchmarked_.end(), shape) != benchmarked_.end()) return;
  benchmarked_.push_back(std::move(shape));
  std::int64_t positions = 1;
  for (std::size_t d = 1; d < conv.shape.size(); ++d) positions *= conv.shape[d];
  const Bytes trial =
      cudnn_benchmark_trial_bytes(conv.params.front(), conv.channels(), positions, options_.batch, activation_bytes_);
  if (trial > 0) free(alloc(trial, Tag::runtime, conv.name));
}

void Lowering::workspace(Node node, Bytes input_bytes, Bytes output_bytes, ConvPass pass) {
  benchmark_trial(node, pass);  // the search runs whether or not the chosen algorithm needs a workspace
  if (!options_.workspace) return;
  const Bytes bytes = conv_workspace_bytes(op(node), input_bytes, output_bytes, pass);
  if (bytes == 0) return;
  free(alloc(bytes, Tag::workspace, op(node).name));
}

}  // namespace allocsim::lowering

namespace allocsim {
namespace {

constexpr Bytes kMaxWorkspace = 128_MiB;

}  // namespace

Bytes conv_workspace_bytes(const ModelOp& conv, Bytes input_bytes, Bytes output_bytes, ConvPass pass) {
  // A model, not a measurement: cuDNN picks algorithms per shape and GPU. Spatial
  // convolutions get a workspace proportional to the larger of the tensors they read and
  // write, capped at 128 MiB (the largest seen); 1x1 convolutions get none. The factors
  // make ResNet-50 at batch 32 sum to the per-step totals of a V100 profile (reference
  // workloads.md 4.6: 573, 1123 and 911 MiB); how the sum splits over convs is the model's.
  if (conv.kernel <= 1) return 0;
  double factor = 0;
  switch (pass) {
    case ConvPass::forward:
      factor = 1.9;
      break;
    case ConvPass::backward_input:
      factor = 5.6;
      break;
    case ConvPass::backward_weight:
      factor = 3.6;
      break;
  }
  const auto bytes = static_cast<Bytes>(factor * static_cast<double>(std::max(input_bytes, output_bytes)));
  return std::min(align_up(bytes, 256), kMaxWorkspace);
}

}  // namespace allocsim
