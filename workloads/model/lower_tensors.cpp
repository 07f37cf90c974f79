// Storages and gradients: when forward's outputs, saved tensors and autocast copies are
// freed, and how gradients are made, shared, summed and passed back to their inputs.
#include "workloads/model/lowering.hpp"

namespace allocsim::lowering {

// ---- forward ----------------------------------------------------------------------
int Lowering::new_storage(Node node, Bytes bytes, Tag tag) {
  storages_.push_back(Storage{alloc(bytes, tag, op(node).name), 0, 0, true, false});
  return static_cast<int>(storages_.size() - 1);
}

void Lowering::save(int storage) {
  if (grad_mode_) ++storages_[storage].savers;
}

void Lowering::release_if_dead(int storage) {
  Storage& s = storages_[storage];
  if (s.live && !s.pinned && s.forward_uses == 0 && s.savers == 0) {
    free(s.id);
    s.live = false;
  }
}

void Lowering::unsave(int storage) {
  --storages_[storage].savers;
  release_if_dead(storage);
}

void Lowering::unsave_all(Node node) {
  for (const int storage : saved_[node]) unsave(storage);
}

void Lowering::free_extras(Node node) {
  for (const AllocId extra : extras_[node]) free(extra);
}

// Autocast: an op that runs in `dtype` reads a copy of an input of another float type
// (int64 ids are never cast). The copy lives while the op runs, or until its backward
// when saved. Returns the storage the op reads; backward finds the dtype in read_as_.
int Lowering::read_as(Node node, Node input, Bytes dtype) {
  const bool cast = options_.precision != Precision::fp32 && op(input).kind != OpKind::input && dtype_[input] != dtype;
  read_as_[node].push_back(cast ? dtype : dtype_[input]);
  if (!cast) return storage_of_[input];
  const int copy = new_storage(node, bytes_of(input, dtype));
  ++storages_[copy].forward_uses;
  casts_.push_back(copy);
  return copy;
}

void Lowering::release_casts() {
  for (const int copy : casts_) {
    --storages_[copy].forward_uses;
    release_if_dead(copy);
  }
  casts_.clear();
}

int Lowering::readers(Node node, int recomputing) const {
  if (recomputing < 0) return static_cast<int>(boost::out_degree(node, graph_));
  int count = 0;
  for (const Edge edge : boost::make_iterator_range(boost::out_edges(node, graph_))) {
    if (op(boost::target(edge, graph_)).unit == recomputing) ++count;
  }
  return count;
}

// ---- backward ---------------------------------------------------------------------
int Lowering::new_grad(Node node, Bytes bytes) {
  grad_pool_.push_back(Grad{alloc(bytes, Tag::gradient, op(node).name), 1});
  return static_cast<int>(grad_pool_.size() - 1);
}

void Lowering::drop(int grad) {
  if (--grad_pool_[grad].references == 0) free(grad_pool_[grad].id);
}

// A gradient arriving for `node`'s output: the first is kept; a second is summed into a
// new tensor and both operands dropped (autograd's out-of-place accumulation).
void Lowering::contribute(Node node, int grad) {
  if (!requires_grad_[node]) {
    drop(grad);
    return;
  }
  int& slot = grad_of_[node];
  if (slot == kNone) {
    slot = grad;
    return;
  }
  const int sum = new_grad(node, output_bytes(node));
  drop(slot);
  drop(grad);
  slot = sum;
}

// The gradient of input `i` as the op read it; one read through an autocast copy goes
// back through the cast (ToCopyBackward) to the input's own dtype.
int Lowering::input_grad(Node node, std::size_t i, Node input) {
  return new_grad(node, bytes_of(input, read_as_[node][i]));
}

void Lowering::pass_back(Node node, std::size_t i, Node input, int grad) {
  if (read_as_[node].size() > i && read_as_[node][i] != dtype_[input] && requires_grad_[input]) {
    const int back = new_grad(node, output_bytes(input));
    drop(grad);
    grad = back;
  }
  contribute(input, grad);
}

}  // namespace allocsim::lowering
