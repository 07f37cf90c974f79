// Ops whose gradient has their input's shape: ReLU, pooling, dropout, the residual add and
// the pointwise ops of transformers.
#include <vector>

#include "workloads/model/lowering.hpp"

namespace allocsim::lowering {

// In place, saving its result for threshold_backward; TensorFlow's Relu writes a new tensor.
int Lowering::forward_relu(const OpStep& step) {
  const int out = tf_ ? new_storage(step.node, step.out_bytes) : storage_of_[step.inputs[0]];
  save(out);
  saved_[step.node] = {out};
  return out;
}

int Lowering::forward_maxpool(const OpStep& step) {
  const Node node = step.node;
  const int out = new_storage(node, step.out_bytes);
  save(storage_of_[step.inputs[0]]);
  saved_[node] = {storage_of_[step.inputs[0]]};
  if (tf_) {  // MaxPoolGrad reads the input and the output
    save(out);
    saved_[node].push_back(out);
  } else if (grad_mode_) {
    extras_[node] = {alloc(batch_bytes(step.op.elements(), 8), Tag::activation, step.op.name)};  // int64 indices
  }
  return out;
}

int Lowering::forward_dropout(const OpStep& step) {
  if (!options_.training) return storage_of_[step.inputs[0]];  // identity in eval
  const int out = new_storage(step.node, step.out_bytes);
  const AllocId mask = alloc(batch_bytes(step.op.elements(), 1), Tag::activation, step.op.name);
  if (grad_mode_) {
    extras_[step.node] = {mask};
  } else {
    free(mask);  // a checkpointed layer's first forward keeps nothing
  }
  return out;
}

// relu, maxpool, avgpool, dropout: one gradient of the input's shape.
void Lowering::backward_input_shaped(const OpStep& step) {
  const int grad_in = new_grad(step.node, output_bytes(step.inputs[0]));
  drop(step.grad_out);
  free_extras(step.node);
  unsave_all(step.node);
  contribute(step.inputs[0], grad_in);
}

int Lowering::forward_add(const OpStep& step) {
  if (step.op.in_place && !tf_) return storage_of_[step.inputs[0]];
  return new_storage(step.node, step.out_bytes);
}

void Lowering::backward_add(const OpStep& step) {
  const std::vector<Node>& inputs = step.inputs;
  if (op(inputs[1]).batched != step.op.batched) {  // a broadcast operand's gradient is summed over the batch
    const int reduced = new_grad(step.node, output_bytes(inputs[1]));
    contribute(inputs[0], step.grad_out);
    contribute(inputs[1], reduced);
    return;
  }
  ++grad_pool_[step.grad_out].references;  // both inputs receive the same tensor
  contribute(inputs[0], step.grad_out);
  contribute(inputs[1], step.grad_out);
}

int Lowering::forward_pointwise(const OpStep& step) {
  const Node node = step.node;
  const int out = new_storage(node, step.out_bytes);
  switch (step.op.pointwise) {
    case Pointwise::scale:
    case Pointwise::shift:
    case Pointwise::where:
      break;
    case Pointwise::pow:
    case Pointwise::gelu:
    case Pointwise::silu:
      saved_[node] = {storage_of_[step.inputs[0]]};
      break;
    case Pointwise::tanh:
      saved_[node] = {out};
      break;
    case Pointwise::mul:
      saved_[node] = {storage_of_[step.inputs[0]], storage_of_[step.inputs[1]]};
      break;
  }
  for (const int storage : saved_[node]) save(storage);
  return out;
}

void Lowering::backward_pointwise(const OpStep& step) {
  const std::vector<Node>& inputs = step.inputs;
  if (step.op.pointwise == Pointwise::shift) {  // x + c: the gradient passes on unchanged
    contribute(inputs[0], step.grad_out);
    return;
  }
  std::vector<int> grads;
  const std::size_t operands = step.op.pointwise == Pointwise::mul ? 2 : 1;
  for (std::size_t i = 0; i < operands; ++i) {
    grads.push_back(requires_grad_[inputs[i]] ? new_grad(step.node, output_bytes(inputs[i])) : kNone);
  }
  drop(step.grad_out);
  unsave_all(step.node);
  for (std::size_t i = 0; i < operands; ++i) {
    if (grads[i] != kNone) contribute(inputs[i], grads[i]);
  }
}

}  // namespace allocsim::lowering
