// Normalisations: BatchNorm2d, LayerNorm and HF's LlamaRMSNorm, forward and backward.
#include "workloads/model/lowering.hpp"

namespace allocsim::lowering {

int Lowering::forward_batchnorm(const OpStep& step) {
  const Node node = step.node;
  const int out = new_storage(node, step.out_bytes);
  if (grad_mode_) {  // save_mean and save_invstd, per channel, in fp32
    const Bytes channels = static_cast<Bytes>(step.op.channels());
    const std::string& name = step.op.name;
    extras_[node] = {alloc(channels * 4, Tag::activation, name), alloc(channels * 4, Tag::activation, name)};
  }
  save(storage_of_[step.inputs[0]]);
  saved_[node] = {storage_of_[step.inputs[0]]};
  return out;
}

void Lowering::backward_batchnorm(const OpStep& step) {
  const Node node = step.node;
  const int grad_in = new_grad(node, step.in_bytes);
  parameter_grads(node);
  drop(step.grad_out);
  free_extras(node);
  unsave(saved_[node][0]);
  contribute(step.inputs[0], grad_in);
}

int Lowering::forward_layernorm(const OpStep& step) {
  const Node node = step.node;
  const std::string& name = step.op.name;
  const int in = read_as(node, step.inputs[0], 4);
  const int out = new_storage(node, step.out_bytes);
  const Bytes rows = output_bytes(node) / dtype_[node] / static_cast<Bytes>(step.op.shape.back());
  const AllocId mean = alloc(rows * 4, Tag::activation, name);
  const AllocId rstd = alloc(rows * 4, Tag::activation, name);
  if (grad_mode_) {
    extras_[node] = {mean, rstd};
  } else {
    free(mean);
    free(rstd);
  }
  save(in);
  saved_[node] = {in};
  return out;
}

void Lowering::backward_layernorm(const OpStep& step) {
  const Node node = step.node;
  const int grad_in = input_grad(node, 0, step.inputs[0]);
  parameter_grads(node);
  drop(step.grad_out);
  free_extras(node);
  unsave_all(node);
  pass_back(node, 0, step.inputs[0], grad_in);
}

// variance = x.pow(2).mean(-1, keepdim=True); x * torch.rsqrt(variance + eps); weight * that.
int Lowering::forward_rmsnorm(const OpStep& step) {
  const Node node = step.node;
  const std::string& name = step.op.name;
  const int in = read_as(node, step.inputs[0], 4);
  const Bytes full = bytes_of(node, 4);
  const Bytes rows = full / static_cast<Bytes>(step.op.shape.back());
  const AllocId squares = alloc(full, Tag::activation, name);
  const AllocId variance = alloc(rows, Tag::activation, name);
  free(squares);
  const AllocId shifted = alloc(rows, Tag::activation, name);
  free(variance);
  const AllocId rstd = alloc(rows, Tag::activation, name);
  free(shifted);
  const AllocId normed = alloc(full, Tag::activation, name);  // x * rstd, saved by the weight's mul
  const int out = new_storage(node, step.out_bytes);
  if (grad_mode_) {
    extras_[node] = {rstd, normed};
  } else {
    free(rstd);
    free(normed);
  }
  save(in);
  saved_[node] = {in};
  return out;
}

// grad * weight, then mul's and rsqrt's and pow's gradients summed into the input's; the
// weight's is (grad * normed).sum over rows.
void Lowering::backward_rmsnorm(const OpStep& step) {
  const Node node = step.node;
  const Bytes full = bytes_of(node, 4);
  const AllocId scaled = alloc(full, Tag::gradient, step.op.name);
  const int grad_in = input_grad(node, 0, step.inputs[0]);
  const AllocId product = alloc(full, Tag::gradient, step.op.name);
  parameter_grads(node);
  free(product);
  free(scaled);
  drop(step.grad_out);
  free_extras(node);
  unsave_all(node);
  pass_back(node, 0, step.inputs[0], grad_in);
}

}  // namespace allocsim::lowering
