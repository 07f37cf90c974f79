// The loss, cross entropy as log_softmax + nll_loss: the end of forward and the start of
// backward.
#include "workloads/model/lowering.hpp"

namespace allocsim::lowering {

// log_softmax runs in fp32 under autocast; nll_loss gives a scalar and total_weight.
// Inference has no loss.
int Lowering::forward_loss(const OpStep& step) {
  if (!options_.training) return kNone;
  const Node node = step.node;
  const Node logits_op = step.inputs[0];
  const Bytes logits = batch_bytes(op(logits_op).elements(), 4);
  int source = storage_of_[logits_op];
  if (options_.precision != Precision::fp32) {
    source = new_storage(node, logits);
    ++storages_[source].forward_uses;
  }
  const int out = new_storage(node, logits);  // log_softmax output, saved
  save(out);
  saved_[node] = {out};
  if (source != storage_of_[logits_op]) {
    --storages_[source].forward_uses;
    release_if_dead(source);
  }
  extras_[node] = {alloc(4, Tag::temp, step.op.name), alloc(4, Tag::temp, step.op.name)};  // loss, total_weight
  return out;
}

// d loss / d loss = 1, nll_loss's gradient, log_softmax_backward's (cast to half under
// autocast), passed to the logits.
void Lowering::backward_loss(const OpStep& step) {
  const Node node = step.node;
  const Bytes logits = batch_bytes(op(step.inputs[0]).elements(), 4);
  const int seed = new_grad(node, 4);
  const int nll = new_grad(node, logits);
  drop(seed);
  int grad_out = new_grad(node, logits);
  drop(nll);
  if (options_.precision != Precision::fp32) {
    const int half = new_grad(node, step.in_bytes);
    drop(grad_out);
    grad_out = half;
  }
  free_extras(node);
  unsave(saved_[node][0]);
  contribute(step.inputs[0], grad_out);
}

}  // namespace allocsim::lowering
