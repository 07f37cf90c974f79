// The lowering's loop: steps of micro-batches, forward over the graph in order and backward
// in reverse, each op lowered by its family's functions, found in one table by its kind.
#include "workloads/model/lower.hpp"

#include <algorithm>
#include <array>
#include <span>
#include <vector>

#include "sim/error.hpp"
#include "workloads/model/lowering.hpp"
#include "workloads/model/runtime_allocations.hpp"

namespace allocsim::lowering {

Lowering::Lowering(const Model& model, const LoweringOptions& options, std::string name, std::span<const Model> shapes)
    : model_(model), graph_(model.graph), options_(options), builder_(TraceInfo{std::move(name), "model"}),
      shapes_(shapes) {
  if (options.batch < 1 || options.accumulation < 1 || options.steps < 1) {
    throw Error("workload " + model.name + ": batch, accumulation and steps must be at least 1");
  }
  if (tf_ && (options.benchmark || options.ddp_bucket_mib > 0)) {
    throw Error("workload " + model.name + ": benchmark and ddp are PyTorch's (cudnn.benchmark, "
                "DistributedDataParallel), not tf's");
  }
  activation_bytes_ = options.precision == Precision::fp32 ? 4 : 2;
  if (options.sharding != Sharding::none) {
    if (tf_ || options.ddp_bucket_mib > 0) {  // inference shards too: the units are gathered as forward runs
      throw Error("workload " + model.name + ": zero and fsdp shard PyTorch (not tf) without ddp");
    }
    rank_.emplace(
        model, options.sharding, options.world, activation_bytes_,
        [this](Bytes bytes, Tag tag, const std::string& layer) { return alloc(bytes, tag, layer); },
        [this](AllocId id) { free(id); });
  }
  const std::size_t ops = boost::num_vertices(graph_);
  storage_of_.assign(ops, kNone);
  grad_of_.assign(ops, kNone);
  cast_of_.assign(ops, {});
  dtype_.assign(ops, 4);
  read_as_.assign(ops, {});
  requires_grad_.assign(ops, false);
  for (const Node node : boost::make_iterator_range(boost::vertices(graph_))) {
    const ModelOp& o = op(node);
    if (o.kind == OpKind::input) inputs_.push_back(node);
    if (o.kind == OpKind::loss) labels_ = o.labels;
    if (o.nf4 && options.training) kbit_training_ = true;
    bool requires_grad = trainable(node);
    for (const Node input : inputs_of(node)) requires_grad = requires_grad || requires_grad_[input];
    requires_grad_[node] = requires_grad;
    if (o.unit >= 0) {
      if (units_.size() <= static_cast<std::size_t>(o.unit)) units_.resize(static_cast<std::size_t>(o.unit) + 1);
      units_[static_cast<std::size_t>(o.unit)].push_back(node);
    }
  }
  saved_unit_inputs_.resize(units_.size());
}

Trace Lowering::run() && {
  allocate_weights();
  if (options_.training && options_.ddp_bucket_mib > 0) wrap_in_ddp();
  for (int step = 0; step < options_.steps; ++step) {
    step_ = step;
    builder_.begin_step();
    for (int micro = 0; micro < options_.accumulation; ++micro) {
      if (!shapes_.empty()) reshape(shapes_[static_cast<std::size_t>(step * options_.accumulation + micro)]);
      new_batch();
      if (options_.training && micro == 0) zero_grad();
      forward();
      if (options_.training) backward();
    }
    if (options_.training) optimizer_step(step);
  }
  return std::move(builder_).finish();
}

// The op families, one row per OpKind in its order (the static_assert below holds it to that).
const Lowering::OpRow& Lowering::row(OpKind kind) {
  using L = Lowering;
  static constexpr std::array<OpRow, kOpKinds> table{{
      {OpKind::input, &L::forward_input, &L::backward_none},
      {OpKind::conv, &L::forward_conv, &L::backward_conv},
      {OpKind::batchnorm, &L::forward_batchnorm, &L::backward_batchnorm},
      {OpKind::relu, &L::forward_relu, &L::backward_input_shaped},
      {OpKind::maxpool, &L::forward_maxpool, &L::backward_input_shaped},
      {OpKind::avgpool, &L::forward_copy, &L::backward_input_shaped},
      {OpKind::dropout, &L::forward_dropout, &L::backward_input_shaped},
      {OpKind::flatten, &L::forward_view, &L::backward_flatten},
      {OpKind::linear, &L::forward_linear, &L::backward_linear},
      {OpKind::add, &L::forward_add, &L::backward_add},
      {OpKind::loss, &L::forward_loss, &L::backward_loss},
      {OpKind::embedding, &L::forward_copy, &L::backward_embedding},
      {OpKind::layernorm, &L::forward_layernorm, &L::backward_layernorm},
      {OpKind::matmul, &L::forward_matmul, &L::backward_by_inputs},
      {OpKind::softmax, &L::forward_softmax, &L::backward_by_inputs},
      {OpKind::pointwise, &L::forward_pointwise, &L::backward_pointwise},
      {OpKind::contiguous, &L::forward_copy, &L::backward_part},
      {OpKind::view, &L::forward_view, &L::backward_part},
      {OpKind::split, &L::forward_view, &L::backward_split},
      {OpKind::rmsnorm, &L::forward_rmsnorm, &L::backward_rmsnorm},
      {OpKind::rope, &L::forward_rope, &L::backward_rope},
      {OpKind::attention, &L::forward_attention, &L::backward_attention},
  }};
  static_assert(
      [] {
        for (std::size_t i = 0; i < table.size(); ++i) {
          if (table[i].kind != static_cast<OpKind>(i)) return false;
        }
        return true;
      }(),
      "one row per OpKind, in the enum's order");
  return table[static_cast<std::size_t>(kind)];
}

std::vector<Node> Lowering::inputs_of(Node node) const {
  std::vector<Node> inputs;
  for (const Edge edge : boost::make_iterator_range(boost::in_edges(node, graph_))) {
    inputs.push_back(boost::source(edge, graph_));
  }
  return inputs;
}

// The dtype of an op's output. Under autocast conv, linear and matmul run in half;
// layer_norm, softmax and log_softmax in fp32; an embedding returns its table's rows and
// RMSNorm its weight's dtype (fp32, or the compute dtype where the weights are held in it:
// compute_dtype_params); the rest follow their float inputs (fp16 + fp32 promotes to fp32).
Bytes Lowering::output_dtype(Node node, const std::vector<Node>& inputs) const {
  const ModelOp& o = op(node);
  if (o.kind == OpKind::input) return o.element_bytes;
  if (options_.precision == Precision::fp32) return 4;
  switch (o.kind) {
    case OpKind::conv:
    case OpKind::batchnorm:
    case OpKind::relu:
    case OpKind::maxpool:
    case OpKind::avgpool:
    case OpKind::flatten:
    case OpKind::linear:
    case OpKind::matmul:
    case OpKind::attention:
      return activation_bytes_;
    case OpKind::embedding:
    case OpKind::rmsnorm:
      // A weight held in the compute dtype gives it (the lookup; LlamaRMSNorm's weight * x.to(dtype)).
      return compute_dtype_params(parameter_owner(node)) ? activation_bytes_ : 4;
    case OpKind::layernorm:  // autocast runs layer_norm in fp32
    case OpKind::softmax:
    case OpKind::loss:
      return 4;
    default: {
      Bytes dtype = 0;
      for (const Node input : inputs) {
        if (op(input).kind != OpKind::input) dtype = std::max(dtype, dtype_[input]);
      }
      return dtype == 0 ? 4 : dtype;  // built from ids alone: the attention mask, in fp32
    }
  }
}

// ---- activation checkpointing (ckpt) ------------------------------------------------
// torch.utils.checkpoint as HF's gradient_checkpointing_enable wraps each decoder layer
// (a unit): its forward runs without grad and the checkpoint saves the layer's inputs;
// backward reaches the layer's last op, reruns the layer's forward with grad (saving as
// usual) and goes back through it, so one layer's activations are alive at a time.

// The storages a unit reads from outside itself, by how many of its ops read each.
std::vector<std::pair<int, int>> Lowering::unit_inputs(int unit) const {
  std::vector<std::pair<int, int>> found;
  for (const Node node : units_[static_cast<std::size_t>(unit)]) {
    for (const Node input : inputs_of(node)) {
      const int storage = storage_of_[input];
      if (op(input).unit == unit || storage == kNone) continue;
      const auto at = std::find_if(found.begin(), found.end(), [&](const auto& s) { return s.first == storage; });
      if (at == found.end()) {
        found.push_back({storage, 1});
      } else {
        ++at->second;
      }
    }
  }
  return found;
}

// The checkpoint's own save_for_backward of the layer's inputs.
void Lowering::save_unit_inputs(int unit) {
  grad_mode_ = true;
  for (const auto& [storage, reads] : unit_inputs(unit)) {
    (void)reads;
    save(storage);
    saved_unit_inputs_[static_cast<std::size_t>(unit)].push_back(storage);
  }
}

void Lowering::recompute(int unit) {
  for (const auto& [storage, reads] : unit_inputs(unit)) storages_[storage].forward_uses += reads;
  std::vector<int> returned;
  for (const Node node : units_[static_cast<std::size_t>(unit)]) {
    grad_mode_ = requires_grad_[node];
    forward_op(node, returned, unit);
  }
  grad_mode_ = true;
}

void Lowering::release_unit_inputs(int unit) {
  for (const int storage : saved_unit_inputs_[static_cast<std::size_t>(unit)]) unsave(storage);
  saved_unit_inputs_[static_cast<std::size_t>(unit)].clear();
}

// ---- forward ----------------------------------------------------------------------
void Lowering::forward() {
  std::vector<int> returned;
  for (const Node node : boost::make_iterator_range(boost::vertices(graph_))) {
    const bool checkpoint = checkpointed(node);
    if (checkpoint && units_[static_cast<std::size_t>(op(node).unit)].front() == node) save_unit_inputs(op(node).unit);
    grad_mode_ = options_.training && !checkpoint && requires_grad_[node];  // autograd records only these
    if (rank_) rank_->forward_op(node);
    forward_op(node, returned, -1);
  }
  if (rank_) rank_->end_forward();
  grad_mode_ = options_.training;
  for (const int storage : returned) {  // the output object goes when forward returns
    --storages_[storage].forward_uses;
    release_if_dead(storage);
  }
  for (const AllocId cast : cached_casts_) free(cast);  // the autocast region ends with forward
  cached_casts_.clear();
}

// One op's forward. `recomputing`: the unit whose forward backward reruns (its outputs'
// readers are the unit's own ops alone), or -1.
void Lowering::forward_op(Node node, std::vector<int>& returned, int recomputing) {
  const ModelOp& o = op(node);
  const std::vector<Node> inputs = inputs_of(node);
  cublas_call(node, forward_cublas_);
  dtype_[node] = output_dtype(node, inputs);
  read_as_[node].clear();
  const OpStep step{.node = node, .op = o, .inputs = inputs, .out_bytes = output_bytes(node)};
  const int out = (this->*row(o.kind).forward)(step);
  storage_of_[node] = out;
  if (out != kNone) storages_[out].forward_uses += readers(node, recomputing);
  if (out != kNone && o.returned) {
    ++storages_[out].forward_uses;
    returned.push_back(out);
  }
  release_casts();
  for (const Node input : inputs) {
    const int storage = storage_of_[input];
    if (storage == kNone) continue;
    --storages_[storage].forward_uses;
    release_if_dead(storage);
  }
  if (out != kNone) release_if_dead(out);
}

// ---- backward ---------------------------------------------------------------------
void Lowering::backward() {
  const auto vertices = boost::vertices(graph_);
  std::vector<Node> order(vertices.first, vertices.second);
  std::reverse(order.begin(), order.end());
  int recomputed = -1;
  for (const Node node : order) {
    if (rank_) rank_->backward_op(node);  // gathers the unit (before a checkpointed unit reruns)
    recomputed = checkpoint_before(node, recomputed);
    if (!requires_grad_[node]) continue;  // the batch, the attention mask
    backward_op(node);
  }
  if (recomputed >= 0) release_unit_inputs(recomputed);
  if (rank_) rank_->end_backward();
  storages_.clear();
  grad_pool_.clear();
}

// Backward reaching `node`: entering a checkpointed unit reruns its forward, leaving one
// releases the inputs its checkpoint saved. Returns the unit whose rerun is alive, or -1.
int Lowering::checkpoint_before(Node node, int recomputed) {
  if (checkpointed(node) && op(node).unit != recomputed) {
    if (recomputed >= 0) release_unit_inputs(recomputed);
    recompute(op(node).unit);
    return op(node).unit;
  }
  if (!checkpointed(node) && recomputed >= 0) {
    release_unit_inputs(recomputed);
    return -1;
  }
  return recomputed;
}

void Lowering::backward_op(Node node) {
  const ModelOp& o = op(node);
  cublas_call(node, backward_cublas_);  // on autograd's device thread: a handle of its own
  const std::vector<Node> inputs = inputs_of(node);
  const OpStep step{.node = node,
                    .op = o,
                    .inputs = inputs,
                    .in_bytes = inputs.empty() ? 0 : batch_bytes(op(inputs[0]).elements(), activation_bytes_),
                    .grad_out = grad_of_[node]};
  // The loss starts backward: no gradient reaches it, and what it keeps its next forward replaces.
  const bool seed = o.kind == OpKind::loss;
  if (!seed && step.grad_out == kNone) throw Error("lowering " + model_.name + ": no gradient reached " + o.name);
  (this->*row(o.kind).backward)(step);
  if (seed) return;
  extras_[node].clear();
  saved_[node].clear();
  grad_of_[node] = kNone;
}

// The next micro-batch's shapes: its graph has the same ops in the same order, so every
// per-op table stays valid; only sizes and the labels per sample change.
void Lowering::reshape(const Model& shaped) {
  graph_ = shaped.graph;
  for (const Node node : boost::make_iterator_range(boost::vertices(graph_))) {
    if (op(node).kind == OpKind::loss) labels_ = op(node).labels;
  }
}

}  // namespace allocsim::lowering

namespace allocsim {

Trace lower_model(const Model& model, const LoweringOptions& options, std::string name) {
  return lowering::Lowering(model, options, std::move(name)).run();
}

Trace lower_model_shapes(std::span<const Model> shapes, const LoweringOptions& options, std::string name) {
  const auto needed = static_cast<std::size_t>(options.steps) * static_cast<std::size_t>(options.accumulation);
  if (shapes.size() != needed) {
    throw Error("lowering " + name + ": " + std::to_string(shapes.size()) + " shapes for " + std::to_string(needed) +
                " micro-batches");
  }
  for (const Model& shaped : shapes) {
    if (boost::num_vertices(shaped.graph) != boost::num_vertices(shapes.front().graph)) {
      throw Error("lowering " + name + ": the micro-batches' graphs differ in their ops");
    }
  }
  return lowering::Lowering(shapes.front(), options, std::move(name), shapes).run();
}

}  // namespace allocsim
