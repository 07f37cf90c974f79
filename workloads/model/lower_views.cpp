// The batch, views and copies: ops that make no tensor of their own (input, flatten, view,
// split) or one plain new one (avgpool, contiguous, embedding), and their gradients.
#include <algorithm>
#include <vector>

#include "workloads/model/lowering.hpp"

namespace allocsim::lowering {

// The batch's tensor, made by new_batch and kept until the next batch replaces it.
int Lowering::forward_input(const OpStep& step) {
  const auto slot = std::find(inputs_.begin(), inputs_.end(), step.node) - inputs_.begin();
  storages_.push_back(Storage{batch_[static_cast<std::size_t>(slot)], 0, 0, true, true});
  return static_cast<int>(storages_.size() - 1);
}

// flatten, view, split: the input's storage (a reshape is a view in both frameworks).
int Lowering::forward_view(const OpStep& step) { return storage_of_[step.inputs[0]]; }

// avgpool, contiguous, embedding: a new tensor, nothing saved by storage.
int Lowering::forward_copy(const OpStep& step) { return new_storage(step.node, step.out_bytes); }

void Lowering::backward_none(const OpStep&) {}

void Lowering::backward_flatten(const OpStep& step) {
  contribute(step.inputs[0], step.grad_out);  // a view: the same tensor flows on
}

// contiguous, view: backward of a part (a slice or a select) is a zero gradient of the
// whole with the part's copied in.
void Lowering::backward_part(const OpStep& step) {
  const Node input = step.inputs[0];
  if (step.op.elements() == op(input).elements()) {
    contribute(input, step.grad_out);  // a reshape or permute of the gradient: a view
    return;
  }
  const int whole = new_grad(step.node, output_bytes(input));
  drop(step.grad_out);
  contribute(input, whole);
}

// Tensor.split's backward waits for every part's gradient, then concatenates them.
void Lowering::backward_split(const OpStep& step) {
  const Node input = step.inputs[0];
  std::vector<int>& parts = split_parts_[input];
  parts.push_back(step.grad_out);
  int expected = 0;
  for (const Edge edge : boost::make_iterator_range(boost::out_edges(input, graph_))) {
    if (op(boost::target(edge, graph_)).kind == OpKind::split) ++expected;
  }
  if (static_cast<int>(parts.size()) < expected) return;
  const int whole = new_grad(input, output_bytes(input));
  for (const int part : parts) drop(part);
  parts.clear();
  contribute(input, whole);
}

}  // namespace allocsim::lowering
