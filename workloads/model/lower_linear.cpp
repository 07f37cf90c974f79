// Products with weights or of activations: Linear (and its 4-bit form, bitsandbytes'
// Linear4bit), a batched matmul of two activations, and an embedding's lookup.
#include <vector>

#include "workloads/model/lowering.hpp"

namespace allocsim::lowering {

int Lowering::forward_linear(const OpStep& step) {
  const Node node = step.node;
  const int in = read_as(node, step.inputs[0], activation_bytes_);
  cast_weights(node);
  if (step.op.nf4) return forward_nf4_linear(step);
  const int out = new_storage(node, step.out_bytes);
  saved_[node].clear();
  if (trainable(node)) {  // the weight's gradient needs the input; a frozen weight's none
    save(in);
    saved_[node] = {in};
  }
  return out;
}

// Linear4bit: matmul_4bit on the dequantized weight, then out.to(x's dtype before its cast
// to the compute dtype): under autocast an fp32 input gives an fp32 output.
int Lowering::forward_nf4_linear(const OpStep& step) {
  const Node node = step.node;
  const Node input = step.inputs[0];
  const AllocId weight = dequantize_nf4(node);
  int out = kNone;
  if (dtype_[input] == dtype_[node]) {
    out = new_storage(node, step.out_bytes);
    free(weight);
  } else {
    const AllocId computed = alloc(step.out_bytes, Tag::activation, step.op.name);
    free(weight);
    dtype_[node] = dtype_[input];
    out = new_storage(node, output_bytes(node));
    free(computed);
  }
  saved_[node].clear();  // MatMul4Bit keeps the packed weight alone
  return out;
}

void Lowering::backward_linear(const OpStep& step) {
  if (step.op.nf4) {
    backward_nf4_linear(step);
    return;
  }
  const Node node = step.node;
  const Node input = step.inputs[0];
  const bool needs_input_grad = requires_grad_[input];
  const int grad_in = needs_input_grad ? input_grad(node, 0, input) : kNone;
  parameter_grads(node);
  drop(step.grad_out);
  free_casts(node);
  unsave_all(node);
  if (needs_input_grad) pass_back(node, 0, input, grad_in);
}

// MatMul4Bit's backward: the gradient back to the compute dtype (out.to's backward), the
// weight dequantized again, grad_A = grad @ W, the weight freed; a frozen base has no
// weight gradient.
void Lowering::backward_nf4_linear(const OpStep& step) {
  const Node node = step.node;
  const Node input = step.inputs[0];
  int grad_out = step.grad_out;
  if (dtype_[node] != activation_bytes_) {
    const int cast = new_grad(node, bytes_of(node, activation_bytes_));
    drop(grad_out);
    grad_out = cast;
  }
  const bool needs_input_grad = requires_grad_[input];
  int grad_in = kNone;
  if (needs_input_grad) {
    const AllocId weight = dequantize_nf4(node);
    grad_in = input_grad(node, 0, input);
    free(weight);
  }
  drop(grad_out);
  unsave_all(node);
  if (needs_input_grad) pass_back(node, 0, input, grad_in);
}

int Lowering::forward_matmul(const OpStep& step) {
  const Node node = step.node;
  const int a = read_as(node, step.inputs[0], activation_bytes_);
  const int b = read_as(node, step.inputs[1], activation_bytes_);
  const int out = new_storage(node, step.out_bytes);
  save(a);
  save(b);
  saved_[node] = {a, b};
  return out;
}

// A gradient for each input as the op read it (matmul, softmax), passed back after the
// saved tensors go.
void Lowering::backward_by_inputs(const OpStep& step) {
  const Node node = step.node;
  std::vector<int> grads;
  for (std::size_t i = 0; i < step.inputs.size(); ++i) grads.push_back(input_grad(node, i, step.inputs[i]));
  drop(step.grad_out);
  unsave_all(node);
  for (std::size_t i = 0; i < step.inputs.size(); ++i) pass_back(node, i, step.inputs[i], grads[i]);
}

// embedding_dense_backward: a gradient for the whole table. (Its forward is a new tensor
// that saves its ids: the batch's, or a view of the positions buffer.)
void Lowering::backward_embedding(const OpStep& step) {
  parameter_grads(step.node);
  drop(step.grad_out);
}

}  // namespace allocsim::lowering
