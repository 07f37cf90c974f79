// The lowering's own state and steps, shared by its files (not an interface: lower.hpp is).
//
// - lower.cpp: the step loop, forward and backward over the graph, the table of op families.
// - lower_tensors.cpp: storages and gradients, their liveness (save, release, contribute).
// - lower_parameters.cpp: weights, their casts and gradients, the batch, zero_grad.
// - lower_runtime.cpp: the framework's own allocations (cuBLAS workspaces, DDP).
// - lower_optimizer.cpp: the optimizer's step.
// - One file per op family, its forward and backward: lower_conv.cpp, lower_norm.cpp,
//   lower_linear.cpp, lower_attention.cpp, lower_elementwise.cpp, lower_views.cpp,
//   lower_loss.cpp.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "workloads/model/lower.hpp"

namespace allocsim::lowering {

constexpr Nanos kEventGap = 1000;  // a nominal microsecond between requests
constexpr int kNone = -1;

// A storage: one allocation that one or more ops' outputs live in (in-place ops and views
// share their input's). It is freed once no forward op will read it and every op that
// saved it for backward has run its backward.
struct Storage {
  AllocId id{};
  int forward_uses = 0;
  int savers = 0;
  bool live = false;
  bool pinned = false;  // the input batch: freed when the next batch replaces it
};

// A gradient tensor, shared by reference where autograd passes one tensor on unchanged.
struct Grad {
  AllocId id{};
  int references = 0;
};

// The op an op family's forward or backward lowers, as the loop found it.
struct OpStep {
  Node node{};
  const ModelOp& op;
  const std::vector<Node>& inputs;
  Bytes out_bytes = 0;   // forward: the output's bytes at the dtype the op computes in
  Bytes in_bytes = 0;    // backward: the first input's batch at the activation dtype
  int grad_out = kNone;  // backward: the gradient that reached the output
};

class Lowering {
 public:
  // `shapes`: the graph of each micro-batch in turn (the same ops, other shapes: a batch
  // padded to its longest sequence), or empty: `model`'s for every one.
  Lowering(const Model& model, const LoweringOptions& options, std::string name, std::span<const Model> shapes = {});

  Trace run() &&;

 private:
  using Edge = ModelGraph::edge_descriptor;

  // An op family's pair, one row per OpKind. Contract:
  // - forward runs once dtype_[node] is set and read_as_[node] cleared; it returns the
  //   storage the output lives in (kNone: none) and records what backward needs (save()
  //   and saved_, extras_, cast_of_); the loop counts the output's readers and releases
  //   the inputs and autocast copies after it.
  // - backward runs for ops that require grad, grad_out set (the loss, which starts
  //   backward, makes its own); it drops grad_out, frees what forward kept for it and
  //   contributes each input's gradient; the loop then clears extras_, saved_ and grad_of_
  //   (not the loss's: its next forward replaces them).
  using Forward = int (Lowering::*)(const OpStep&);
  using Backward = void (Lowering::*)(const OpStep&);
  struct OpRow {
    OpKind kind;
    Forward forward;
    Backward backward;
  };
  static const OpRow& row(OpKind kind);  // the table, in lower.cpp

  const ModelOp& op(Node node) const { return graph_[node]; }
  Bytes batch_bytes(std::int64_t per_sample, Bytes element) const {
    return static_cast<Bytes>(per_sample) * static_cast<Bytes>(options_.batch) * element;
  }
  std::vector<Node> inputs_of(Node node) const;

  AllocId alloc(Bytes bytes, Tag tag, const std::string& layer) {
    return builder_.alloc(tick(), bytes, 0, tag, layer);
  }
  void free(AllocId id) { builder_.free(tick(), id); }
  Nanos tick() { return time_ += kEventGap; }

  // Bytes of a node's whole output (the batch, unless one tensor serves it) at a dtype.
  Bytes bytes_of(Node node, Bytes element) const {
    const Bytes bytes = static_cast<Bytes>(op(node).elements()) * element;
    return op(node).batched ? bytes * static_cast<Bytes>(options_.batch) : bytes;
  }
  Bytes output_bytes(Node node) const { return bytes_of(node, dtype_[node]); }

  // A tied op (GPT-2's LM head) computes with its owner's parameters.
  Node parameter_owner(Node node) const { return op(node).tied_to.value_or(node); }
  // Whether the op has parameters that get gradients (not frozen, as LoRA's base is).
  bool trainable(Node node) const {
    const ModelOp& owner = op(parameter_owner(node));
    return !owner.params.empty() && !owner.frozen;
  }
  const std::vector<std::int64_t>& params_of(Node node) const { return op(parameter_owner(node)).params; }
  // Whether the owner's parameters are held in the compute dtype (2 bytes under amp or bf16):
  // those that get no gradient (LoRA's frozen base, every one in inference), as PyTorch users
  // load a base (from_pretrained(torch_dtype=...), model.half()), so autocast casts nothing;
  // unless the spec keeps them in fp32 (fp32base), TensorFlow runs it (Keras' mixed precision
  // keeps variables in fp32), or a QLoRA base trains (prepare_model_for_kbit_training casts
  // what is not 4-bit to fp32). A sharded rank holds its own dtypes (sharding.hpp).
  bool compute_dtype_params(Node owner) const {
    if (options_.precision == Precision::fp32 || options_.fp32_base || tf_ || rank_) return false;
    if (options_.training) return op(owner).frozen && !kbit_training_;
    return true;
  }
  Bytes output_dtype(Node node, const std::vector<Node>& inputs) const;

  // ---- the framework's own allocations (lower_runtime.cpp) ---------------------------
  bool traces_runtime() const { return options_.runtime && !tf_; }
  void cublas_call(Node node, bool& has_workspace);
  void wrap_in_ddp();

  // ---- persistent state (lower_parameters.cpp) ---------------------------------------
  void allocate_weights();
  AllocId quantize_nf4(Node node, std::int64_t elements);
  AllocId dequantize_nf4(Node node);
  void new_batch();
  void zero_grad();
  void cast_weights(Node node);
  void free_casts(Node node);
  void parameter_grads(Node node);

  // ---- storages and gradients (lower_tensors.cpp) ------------------------------------
  int new_storage(Node node, Bytes bytes, Tag tag = Tag::activation);
  void save(int storage);
  void release_if_dead(int storage);
  void unsave(int storage);
  void unsave_all(Node node);
  void free_extras(Node node);
  int read_as(Node node, Node input, Bytes dtype);
  void release_casts();
  int readers(Node node, int recomputing) const;
  int new_grad(Node node, Bytes bytes);
  void drop(int grad);
  void contribute(Node node, int grad);
  int input_grad(Node node, std::size_t i, Node input);
  void pass_back(Node node, std::size_t i, Node input, int grad);

  // ---- the loop over the graph (lower.cpp) -------------------------------------------
  bool checkpointed(Node node) const { return options_.checkpoint && options_.training && op(node).unit >= 0; }
  std::vector<std::pair<int, int>> unit_inputs(int unit) const;
  void save_unit_inputs(int unit);
  void recompute(int unit);
  void release_unit_inputs(int unit);
  void forward();
  void forward_op(Node node, std::vector<int>& returned, int recomputing);
  void backward();
  int checkpoint_before(Node node, int recomputed);
  void backward_op(Node node);
  void reshape(const Model& shaped);

  // ---- op families: forward returns the output's storage, backward takes grad_out ------
  int forward_input(const OpStep& step);                 // lower_views.cpp
  int forward_view(const OpStep& step);                  // flatten, view, split
  int forward_copy(const OpStep& step);                  // avgpool, contiguous, embedding
  void backward_none(const OpStep& step);                // input
  void backward_flatten(const OpStep& step);
  void backward_part(const OpStep& step);                // contiguous, view
  void backward_split(const OpStep& step);
  int forward_conv(const OpStep& step);                  // lower_conv.cpp
  void backward_conv(const OpStep& step);
  void benchmark_trial(Node node, ConvPass pass);
  void workspace(Node node, Bytes input_bytes, Bytes output_bytes, ConvPass pass);
  int forward_batchnorm(const OpStep& step);             // lower_norm.cpp
  void backward_batchnorm(const OpStep& step);
  int forward_layernorm(const OpStep& step);
  void backward_layernorm(const OpStep& step);
  int forward_rmsnorm(const OpStep& step);
  void backward_rmsnorm(const OpStep& step);
  int forward_linear(const OpStep& step);                // lower_linear.cpp
  int forward_nf4_linear(const OpStep& step);
  void backward_linear(const OpStep& step);
  void backward_nf4_linear(const OpStep& step);
  int forward_matmul(const OpStep& step);
  void backward_by_inputs(const OpStep& step);           // matmul, softmax
  void backward_embedding(const OpStep& step);
  int forward_attention(const OpStep& step);             // lower_attention.cpp
  void backward_attention(const OpStep& step);
  int forward_softmax(const OpStep& step);
  int forward_rope(const OpStep& step);
  void backward_rope(const OpStep& step);
  int forward_relu(const OpStep& step);                  // lower_elementwise.cpp
  int forward_maxpool(const OpStep& step);
  int forward_dropout(const OpStep& step);
  void backward_input_shaped(const OpStep& step);        // relu, maxpool, avgpool, dropout
  int forward_add(const OpStep& step);
  void backward_add(const OpStep& step);
  int forward_pointwise(const OpStep& step);
  void backward_pointwise(const OpStep& step);
  int forward_loss(const OpStep& step);                  // lower_loss.cpp
  void backward_loss(const OpStep& step);

  // ---- optimizer (lower_optimizer.cpp) -----------------------------------------------
  using OptimizerTensor = ShardedRank::OptimizerTensor;
  std::vector<OptimizerTensor> optimizer_tensors();
  void bnb_adam_init(const OptimizerTensor& tensor);
  void optimizer_step(int step);

  const Model& model_;
  ModelGraph graph_;  // a copy: reshape() replaces it
  LoweringOptions options_;
  bool tf_ = options_.framework == Framework::tf;
  bool kbit_training_ = false;                        // a training step over a 4-bit (NF4) base
  std::optional<ShardedRank> rank_;                   // zero=, fsdp=: this rank's shards and gathers
  bool dynamic_map_ = false;                          // bitsandbytes' 8-bit dynamic map is on the device
  bool optimizer_maps_ = false;                       // bitsandbytes' optimizer qmaps are on the device
  TraceBuilder builder_;
  Bytes activation_bytes_ = 4;
  Nanos time_ = 0;
  int step_ = 0;
  bool forward_cublas_ = false;   // the main thread's cuBLAS handle has its workspace
  bool backward_cublas_ = false;  // autograd's device thread's handle has its workspace
  // Convolution shapes and passes benchmark mode has searched: (pass, input, output, weight).
  std::vector<std::tuple<int, std::vector<std::int64_t>, std::vector<std::int64_t>, std::int64_t>> benchmarked_;

  std::vector<std::pair<Node, AllocId>> weights_;     // every parameter tensor, in order
  std::vector<std::optional<AllocId>> grads_;         // .grad of each, when it exists
  std::vector<Node> inputs_;                          // the input ops, in order
  std::int64_t labels_ = 1;                           // int64 targets per sample
  std::vector<AllocId> batch_;                        // each input's tensor, then the labels
  std::vector<Storage> storages_;
  std::vector<int> storage_of_;                       // by op: the storage its output lives in
  std::vector<Grad> grad_pool_;
  std::vector<int> grad_of_;                          // by op: its output's gradient, once complete
  std::vector<std::vector<AllocId>> cast_of_;         // by op: autocast weight copies it saved
  std::map<Node, std::vector<int>> saved_;            // storages each op saved for backward
  std::map<Node, std::vector<AllocId>> extras_;       // tensors an op allocated for its own backward
  std::map<Node, std::size_t> params_seen_;
  std::vector<Bytes> dtype_;                          // by op: bytes per element of its output
  std::vector<std::vector<Bytes>> read_as_;           // by op: the dtype it read each input in
  std::vector<bool> requires_grad_;                   // by op: whether backward reaches it
  std::vector<int> casts_;                            // autocast copies of the op running now
  bool grad_mode_ = true;                             // autograd records (saves) what forward does
  std::vector<AllocId> cached_casts_;                 // weight casts made without grad, until forward ends
  std::vector<std::vector<Node>> units_;              // by checkpoint unit: its ops, in forward order
  std::vector<std::vector<int>> saved_unit_inputs_;   // by unit: the storages its checkpoint saved
  std::map<Node, std::vector<int>> split_parts_;      // by split op's input: part gradients so far
  std::span<const Model> shapes_;                     // by micro-batch, when shapes change (padded)
};

}  // namespace allocsim::lowering
