// Attention: SDPA's fused kernel, softmax over scores, and the rotary embedding of q and k.
#include <vector>

#include "workloads/model/lowering.hpp"

namespace allocsim::lowering {

// _scaled_dot_product_flash_attention / _efficient_attention: the output and the
// log-sum-exp, B x heads x S in fp32, both saved with q, k and v.
int Lowering::forward_attention(const OpStep& step) {
  const Node node = step.node;
  const int q = read_as(node, step.inputs[0], activation_bytes_);
  const int k = read_as(node, step.inputs[1], activation_bytes_);
  const int v = read_as(node, step.inputs[2], activation_bytes_);
  const int out = new_storage(node, step.out_bytes);
  const Bytes lse = batch_bytes(step.op.heads * step.op.shape.front(), 4);
  const AllocId logsumexp = alloc(lse, Tag::activation, step.op.name);
  if (grad_mode_) {
    extras_[node] = {logsumexp};
  } else {
    free(logsumexp);
  }
  for (const int saved : {q, k, v, out}) save(saved);
  saved_[node] = {q, k, v, out};
  return out;
}

// The backward kernel's fp32 dq accumulator and softmax_d (B x heads x S) beside the three
// gradients.
void Lowering::backward_attention(const OpStep& step) {
  const Node node = step.node;
  const std::vector<Node>& inputs = step.inputs;
  const Bytes rows = batch_bytes(step.op.heads * step.op.shape.front(), 4);
  const AllocId softmax_d = alloc(rows, Tag::gradient, step.op.name);
  const AllocId dq_accum = alloc(bytes_of(inputs[0], 4), Tag::gradient, step.op.name);
  std::vector<int> grads;
  for (std::size_t i = 0; i < inputs.size(); ++i) grads.push_back(input_grad(node, i, inputs[i]));
  free(dq_accum);
  free(softmax_d);
  drop(step.grad_out);
  free_extras(node);
  unsave_all(node);
  for (std::size_t i = 0; i < inputs.size(); ++i) pass_back(node, i, inputs[i], grads[i]);
}

// In fp32, saving its output; its backward is backward_by_inputs (lower_linear.cpp).
int Lowering::forward_softmax(const OpStep& step) {
  const Node node = step.node;
  read_as(node, step.inputs[0], 4);
  const int out = new_storage(node, step.out_bytes);
  save(out);
  saved_[node] = {out};
  return out;
}

// q * cos + rotate_half(q) * sin, rotate_half = cat((-x2, x1)): cos and sin (B x S x
// head_dim, made once per forward) are small and not traced; each product is a tensor.
int Lowering::forward_rope(const OpStep& step) {
  const std::string& name = step.op.name;
  const Bytes bytes = step.out_bytes;
  const AllocId with_cos = alloc(bytes, Tag::activation, name);
  const AllocId negated = alloc(bytes / 2, Tag::activation, name);
  const AllocId rotated = alloc(bytes, Tag::activation, name);
  free(negated);
  const AllocId with_sin = alloc(bytes, Tag::activation, name);
  free(rotated);
  const int out = new_storage(step.node, bytes);
  free(with_cos);
  free(with_sin);
  return out;
}

void Lowering::backward_rope(const OpStep& step) {
  const AllocId rotated = alloc(output_bytes(step.node), Tag::gradient, step.op.name);
  const int grad_in = new_grad(step.node, output_bytes(step.inputs[0]));
  free(rotated);
  drop(step.grad_out);
  contribute(step.inputs[0], grad_in);
}

}  // namespace allocsim::lowering
