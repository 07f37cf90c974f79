#include "workloads/model/lower.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <span>
#include <tuple>
#include <vector>

#include "sim/error.hpp"
#include "workloads/model/bitsandbytes.hpp"
#include "workloads/model/runtime_allocations.hpp"

namespace allocsim {
namespace {

constexpr Nanos kEventGap = 1000;  // a nominal microsecond between requests
constexpr Bytes kMaxWorkspace = 128_MiB;
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

class Lowering {
 public:
  // `shapes`: the graph of each micro-batch in turn (the same ops, other shapes: a batch
  // padded to its longest sequence), or empty: `model`'s for every one.
  Lowering(const Model& model, const LoweringOptions& options, std::string name, std::span<const Model> shapes = {})
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

  Trace run() && {
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

 private:
  using Edge = ModelGraph::edge_descriptor;

  const ModelOp& op(Node node) const { return graph_[node]; }
  Bytes batch_bytes(std::int64_t per_sample, Bytes element) const {
    return static_cast<Bytes>(per_sample) * static_cast<Bytes>(options_.batch) * element;
  }
  std::vector<Node> inputs_of(Node node) const {
    std::vector<Node> inputs;
    for (const Edge edge : boost::make_iterator_range(boost::in_edges(node, graph_))) {
      inputs.push_back(boost::source(edge, graph_));
    }
    return inputs;
  }

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

  // The dtype of an op's output. Under autocast conv, linear and matmul run in half;
  // layer_norm, softmax and log_softmax in fp32; an embedding returns its fp32 table's
  // rows; the rest follow their float inputs (fp16 + fp32 promotes to fp32).
  Bytes output_dtype(Node node, const std::vector<Node>& inputs) const {
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
      case OpKind::layernorm:
      case OpKind::rmsnorm:
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
  // ---- the framework's own allocations (runtime_allocations.hpp) -----------------------
  bool traces_runtime() const { return options_.runtime && !tf_; }

  // A cuBLAS call on a thread whose handle has no workspace yet makes one, kept.
  void cublas_call(Node node, bool& has_workspace) {
    const OpKind kind = op(node).kind;
    if (has_workspace || !traces_runtime() || (kind != OpKind::linear && kind != OpKind::matmul)) return;
    alloc(cublas_workspace_bytes(options_.compute_capability), Tag::runtime, "cublas_workspace");
    has_workspace = true;
  }

  // benchmark: the first step's first run of each convolution shape and pass searches its
  // algorithms in one trial workspace, freed before the chosen one is made.
  void benchmark_trial(Node node, ConvPass pass) {
    if (!options_.benchmark || step_ != 0) return;
    const ModelOp& conv = op(node);
    const Node input = inputs_of(node).front();
    auto shape = std::make_tuple(static_cast<int>(pass), op(input).shape, conv.shape, conv.params.front());
    if (std::find(benchmarked_.begin(), benchmarked_.end(), shape) != benchmarked_.end()) return;
    benchmarked_.push_back(std::move(shape));
    std::int64_t positions = 1;
    for (std::size_t d = 1; d < conv.shape.size(); ++d) positions *= conv.shape[d];
    const Bytes trial = cudnn_benchmark_trial_bytes(conv.params.front(), conv.channels(), positions, options_.batch,
                                                    activation_bytes_);
    if (trial > 0) free(alloc(trial, Tag::runtime, conv.name));
  }

  // DistributedDataParallel(model) after the weights are on the device: its first
  // collective creates the NCCL communicator, the weights are broadcast from rank 0 in
  // coalesced pieces, then the Reducer makes its buckets.
  void wrap_in_ddp() {
    alloc(kNcclBuffersEstimate, Tag::runtime, "nccl_buffers");
    std::vector<Bytes> parameters;
    for (auto weight = weights_.rbegin(); weight != weights_.rend(); ++weight) {
      parameters.push_back(builder_.bytes_of(weight->second));
    }
    Bytes total = 0;
    for (const Bytes bytes : parameters) total += bytes;
    for (Bytes left = total; left > 0;) {
      const Bytes piece = std::min(left, kDdpBroadcastBucketBytes);
      free(alloc(piece, Tag::runtime, "ddp_broadcast"));
      left -= piece;
    }
    const Bytes cap = static_cast<Bytes>(options_.ddp_bucket_mib) * 1_MiB;
    for (const Bytes bucket : ddp_bucket_bytes(parameters, cap)) alloc(bucket, Tag::runtime, "ddp_bucket");
  }

  // ---- persistent state -------------------------------------------------------------
  void allocate_weights() {
    for (const Node node : boost::make_iterator_range(boost::vertices(graph_))) {
      for (std::size_t i = 0; i < op(node).params.size(); ++i) {
        const std::int64_t elements = op(node).params[i];
        if (op(node).nf4 && i == 0) {
          weights_.push_back({node, quantize_nf4(node, elements)});
        } else if (rank_ && !rank_->replicated()) {
          weights_.push_back({node, AllocId{}});  // the rank's shards instead (allocate_parameters)
        } else {
          // ZeRO-1 and 2 keep the module whole in its compute dtype; fp32 masters are sharded.
          const Bytes bytes = rank_ ? activation_bytes_ : 4;
          weights_.push_back({node, alloc(static_cast<Bytes>(elements) * bytes, Tag::weight, op(node).name)});
        }
      }
      for (const Bytes buffer : op(node).buffers) alloc(buffer, Tag::weight, op(node).name);
      if (op(node).kind == OpKind::batchnorm) {  // running_mean, running_var, num_batches_tracked
        const Bytes channels = static_cast<Bytes>(op(node).channels());
        alloc(channels * 4, Tag::weight, op(node).name);
        alloc(channels * 4, Tag::weight, op(node).name);
        alloc(8, Tag::weight, op(node).name);
      }
    }
    if (rank_) rank_->allocate_parameters();
    grads_.assign(weights_.size(), std::nullopt);
  }

  // Params4bit._quantize as transformers loads a bitsandbytes 4-bit model: the checkpoint's
  // weight comes to the device in the compute dtype, quantize_4bit makes the absmax (fp32),
  // the packed codes and the NF4 code, then double quantisation the offset, the dynamic map
  // (once), the second-level absmax and the 8-bit absmax; the fp32 absmax and the loaded
  // weight go. Returns the packed weight.
  AllocId quantize_nf4(Node node, std::int64_t elements) {
    const Nf4Layout layout = nf4_layout(elements);
    const std::string& name = op(node).name;
    const AllocId loaded = alloc(static_cast<Bytes>(elements) * activation_bytes_, Tag::weight, name);
    const AllocId absmax = alloc(layout.absmax_fp32, Tag::weight, name);
    const AllocId packed = alloc(layout.packed, Tag::weight, name);
    alloc(layout.code, Tag::weight, name);
    alloc(layout.offset, Tag::weight, name);
    if (!dynamic_map_) {
      alloc(kDynamicMapBytes, Tag::weight, "bitsandbytes.dynamic_map");
      dynamic_map_ = true;
    }
    alloc(layout.absmax2, Tag::weight, name);
    alloc(layout.absmax_8bit, Tag::weight, name);
    free(absmax);
    free(loaded);
    return packed;
  }

  // dequantize_4bit with a nested state: the fp32 absmax dequantized (and the offset added
  // in place), then the whole weight in the compute dtype; the absmax goes when it returns.
  // The caller frees the weight after its matmul.
  AllocId dequantize_nf4(Node node) {
    const std::int64_t elements = op(node).params.front();
    const AllocId absmax = alloc(nf4_layout(elements).absmax_fp32, Tag::temp, op(node).name);
    const AllocId weight = alloc(static_cast<Bytes>(elements) * activation_bytes_, Tag::temp, op(node).name);
    free(absmax);
    return weight;
  }

  void new_batch() {
    // The loader's next batch (every model input, then the labels) arrives before the old
    // one is released (rebinding x, y).
    std::vector<AllocId> batch;
    for (const Node input : inputs_) {
      batch.push_back(alloc(batch_bytes(op(input).elements(), op(input).element_bytes), Tag::input, op(input).name));
    }
    batch.push_back(alloc(batch_bytes(labels_, 8), Tag::input, "labels"));
    for (const AllocId old : batch_) free(old);
    batch_ = std::move(batch);
  }

  void zero_grad() {
    if (!options_.set_to_none || tf_) return;
    if (rank_) rank_->zero_grad();
    for (auto& grad : grads_) {
      if (grad) free(*grad);
      grad.reset();
    }
  }

  // ---- forward ----------------------------------------------------------------------
  int new_storage(Node node, Bytes bytes, Tag tag = Tag::activation) {
    storages_.push_back(Storage{alloc(bytes, tag, op(node).name), 0, 0, true, false});
    return static_cast<int>(storages_.size() - 1);
  }

  void save(int storage) {
    if (grad_mode_) ++storages_[storage].savers;
  }

  void release_if_dead(int storage) {
    Storage& s = storages_[storage];
    if (s.live && !s.pinned && s.forward_uses == 0 && s.savers == 0) {
      free(s.id);
      s.live = false;
    }
  }

  void unsave(int storage) {
    --storages_[storage].savers;
    release_if_dead(storage);
  }

  // Under autocast, conv and linear cast their fp32 weights to half precision on first
  // use; the casts they save for backward stay alive until that backward has run. Without
  // grad in a training step (a checkpointed layer's first forward), autocast's cache of
  // casts of leaves that require grad keeps them until the autocast region ends, with
  // forward (cached_cast in aten/src/ATen/autocast_mode.cpp).
  void cast_weights(Node node) {
    // A sharded rank computes with parameters already in the compute dtype (gathered or kept
    // so); a 4-bit base is dequantized instead (its bias cast, a few bytes, is not traced).
    if (options_.precision == Precision::fp32 || rank_ || op(node).nf4) return;
    for (const std::int64_t elements : params_of(node)) {
      const AllocId cast = alloc(static_cast<Bytes>(elements) * 2, Tag::weight, op(node).name);
      if (grad_mode_) {
        cast_of_[node].push_back(cast);
      } else if (options_.training) {
        cached_casts_.push_back(cast);
      } else {
        free(cast);
      }
    }
  }

  void workspace(Node node, Bytes input_bytes, Bytes output_bytes, ConvPass pass) {
    benchmark_trial(node, pass);  // the search runs whether or not the chosen algorithm needs a workspace
    if (!options_.workspace) return;
    const Bytes bytes = conv_workspace_bytes(op(node), input_bytes, output_bytes, pass);
    if (bytes == 0) return;
    free(alloc(bytes, Tag::workspace, op(node).name));
  }

  // Autocast: an op that runs in `dtype` reads a copy of an input of another float type
  // (int64 ids are never cast). The copy lives while the op runs, or until its backward
  // when saved. Returns the storage the op reads; backward finds the dtype in read_as_.
  int read_as(Node node, Node input, Bytes dtype) {
    const bool cast =
        options_.precision != Precision::fp32 && op(input).kind != OpKind::input && dtype_[input] != dtype;
    read_as_[node].push_back(cast ? dtype : dtype_[input]);
    if (!cast) return storage_of_[input];
    const int copy = new_storage(node, bytes_of(input, dtype));
    ++storages_[copy].forward_uses;
    casts_.push_back(copy);
    return copy;
  }

  void release_casts() {
    for (const int copy : casts_) {
      --storages_[copy].forward_uses;
      release_if_dead(copy);
    }
    casts_.clear();
  }

  // ---- activation checkpointing (ckpt) ------------------------------------------------
  // torch.utils.checkpoint as HF's gradient_checkpointing_enable wraps each decoder layer
  // (a unit): its forward runs without grad and the checkpoint saves the layer's inputs;
  // backward reaches the layer's last op, reruns the layer's forward with grad (saving as
  // usual) and goes back through it, so one layer's activations are alive at a time.
  bool checkpointed(Node node) const { return options_.checkpoint && options_.training && op(node).unit >= 0; }

  // The storages a unit reads from outside itself, by how many of its ops read each.
  std::vector<std::pair<int, int>> unit_inputs(int unit) const {
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

  void recompute(int unit) {
    for (const auto& [storage, reads] : unit_inputs(unit)) storages_[storage].forward_uses += reads;
    std::vector<int> returned;
    for (const Node node : units_[static_cast<std::size_t>(unit)]) {
      grad_mode_ = requires_grad_[node];
      forward_op(node, returned, unit);
    }
    grad_mode_ = true;
  }

  void release_unit_inputs(int unit) {
    for (const int storage : saved_unit_inputs_[static_cast<std::size_t>(unit)]) unsave(storage);
    saved_unit_inputs_[static_cast<std::size_t>(unit)].clear();
  }

  void forward() {
    std::vector<int> returned;
    for (const Node node : boost::make_iterator_range(boost::vertices(graph_))) {
      const bool checkpoint = checkpointed(node);
      if (checkpoint && units_[static_cast<std::size_t>(op(node).unit)].front() == node) {
        grad_mode_ = true;  // the checkpoint's own save_for_backward of the layer's inputs
        for (const auto& [storage, reads] : unit_inputs(op(node).unit)) {
          (void)reads;
          save(storage);
          saved_unit_inputs_[static_cast<std::size_t>(op(node).unit)].push_back(storage);
        }
      }
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
  void forward_op(Node node, std::vector<int>& returned, int recomputing) {
    const bool training = grad_mode_;
    {
      const ModelOp& o = op(node);
      const std::vector<Node> inputs = inputs_of(node);
      cublas_call(node, forward_cublas_);
      dtype_[node] = output_dtype(node, inputs);
      read_as_[node].clear();
      const Bytes out_bytes = output_bytes(node);
      int out = kNone;
      switch (o.kind) {
        case OpKind::input: {
          const auto slot = std::find(inputs_.begin(), inputs_.end(), node) - inputs_.begin();
          storages_.push_back(Storage{batch_[static_cast<std::size_t>(slot)], 0, 0, true, true});
          out = static_cast<int>(storages_.size() - 1);
          break;
        }
        case OpKind::conv: {
          cast_weights(node);
          int in = storage_of_[inputs[0]];
          if (op(inputs[0]).kind == OpKind::input && options_.precision != Precision::fp32) {
            in = new_storage(node, batch_bytes(op(inputs[0]).elements(), 2));  // the image, cast to half
            ++storages_[in].forward_uses;
          }
          workspace(node, batch_bytes(op(inputs[0]).elements(), activation_bytes_), out_bytes, ConvPass::forward);
          out = new_storage(node, out_bytes);
          save(in);
          if (in != storage_of_[inputs[0]]) {
            --storages_[in].forward_uses;
            release_if_dead(in);  // under no_grad nothing saved the half image
          }
          saved_[node] = {in};
          break;
        }
        case OpKind::batchnorm: {
          out = new_storage(node, out_bytes);
          if (training) {  // save_mean and save_invstd, per channel, in fp32
            const Bytes channels = static_cast<Bytes>(o.channels());
            extras_[node] = {alloc(channels * 4, Tag::activation, o.name), alloc(channels * 4, Tag::activation, o.name)};
          }
          save(storage_of_[inputs[0]]);
          saved_[node] = {storage_of_[inputs[0]]};
          break;
        }
        case OpKind::relu:
        case OpKind::flatten:
          // TensorFlow's Relu kernel writes a new tensor; a reshape is a view in both.
          out = o.kind == OpKind::relu && tf_ ? new_storage(node, out_bytes) : storage_of_[inputs[0]];
          if (o.kind == OpKind::relu) {
            save(out);  // threshold_backward needs the result
            saved_[node] = {out};
          }
          break;
        case OpKind::add:
          if (o.in_place && !tf_) {
            out = storage_of_[inputs[0]];
          } else {
            out = new_storage(node, out_bytes);
          }
          break;
        case OpKind::maxpool: {
          out = new_storage(node, out_bytes);
          save(storage_of_[inputs[0]]);
          saved_[node] = {storage_of_[inputs[0]]};
          if (tf_) {  // MaxPoolGrad reads the input and the output
            save(out);
            saved_[node].push_back(out);
          } else if (training) {
            extras_[node] = {alloc(batch_bytes(o.elements(), 8), Tag::activation, o.name)};  // int64 indices
          }
          break;
        }
        case OpKind::avgpool:
          out = new_storage(node, out_bytes);
          break;
        case OpKind::dropout: {
          if (!options_.training) {
            out = storage_of_[inputs[0]];  // identity in eval
            break;
          }
          out = new_storage(node, out_bytes);
          const AllocId mask = alloc(batch_bytes(o.elements(), 1), Tag::activation, o.name);
          if (training) {
            extras_[node] = {mask};
          } else {
            free(mask);  // a checkpointed layer's first forward keeps nothing
          }
          break;
        }
        case OpKind::linear: {
          const int in = read_as(node, inputs[0], activation_bytes_);
          cast_weights(node);
          if (o.nf4) {
            // Linear4bit: matmul_4bit on the dequantized weight, then out.to(x's dtype before
            // its cast to the compute dtype): under autocast an fp32 input gives an fp32 output.
            const AllocId weight = dequantize_nf4(node);
            if (dtype_[inputs[0]] == dtype_[node]) {
              out = new_storage(node, out_bytes);
              free(weight);
            } else {
              const AllocId computed = alloc(out_bytes, Tag::activation, o.name);
              free(weight);
              dtype_[node] = dtype_[inputs[0]];
              out = new_storage(node, output_bytes(node));
              free(computed);
            }
            saved_[node].clear();  // MatMul4Bit keeps the packed weight alone
            break;
          }
          out = new_storage(node, out_bytes);
          saved_[node].clear();
          if (trainable(node)) {  // the weight's gradient needs the input; a frozen weight's none
            save(in);
            saved_[node] = {in};
          }
          break;
        }
        case OpKind::embedding:  // saves its ids: the batch's, or a view of the positions buffer
          out = new_storage(node, out_bytes);
          break;
        case OpKind::layernorm: {
          const int in = read_as(node, inputs[0], 4);
          out = new_storage(node, out_bytes);
          const Bytes rows = output_bytes(node) / dtype_[node] / static_cast<Bytes>(o.shape.back());
          const AllocId mean = alloc(rows * 4, Tag::activation, o.name);
          const AllocId rstd = alloc(rows * 4, Tag::activation, o.name);
          if (training) {
            extras_[node] = {mean, rstd};
          } else {
            free(mean);
            free(rstd);
          }
          save(in);
          saved_[node] = {in};
          break;
        }
        case OpKind::rmsnorm: {
          // variance = x.pow(2).mean(-1, keepdim=True); x * torch.rsqrt(variance + eps); weight * that.
          const int in = read_as(node, inputs[0], 4);
          const Bytes full = bytes_of(node, 4);
          const Bytes rows = full / static_cast<Bytes>(o.shape.back());
          const AllocId squares = alloc(full, Tag::activation, o.name);
          const AllocId variance = alloc(rows, Tag::activation, o.name);
          free(squares);
          const AllocId shifted = alloc(rows, Tag::activation, o.name);
          free(variance);
          const AllocId rstd = alloc(rows, Tag::activation, o.name);
          free(shifted);
          const AllocId normed = alloc(full, Tag::activation, o.name);  // x * rstd, saved by the weight's mul
          out = new_storage(node, out_bytes);
          if (training) {
            extras_[node] = {rstd, normed};
          } else {
            free(rstd);
            free(normed);
          }
          save(in);
          saved_[node] = {in};
          break;
        }
        case OpKind::rope: {
          // q * cos + rotate_half(q) * sin, rotate_half = cat((-x2, x1)): cos and sin (B x S x
          // head_dim, made once per forward) are small and not traced; each product is a tensor.
          const AllocId with_cos = alloc(out_bytes, Tag::activation, o.name);
          const AllocId negated = alloc(out_bytes / 2, Tag::activation, o.name);
          const AllocId rotated = alloc(out_bytes, Tag::activation, o.name);
          free(negated);
          const AllocId with_sin = alloc(out_bytes, Tag::activation, o.name);
          free(rotated);
          out = new_storage(node, out_bytes);
          free(with_cos);
          free(with_sin);
          break;
        }
        case OpKind::attention: {
          // _scaled_dot_product_flash_attention / _efficient_attention: the output and the
          // log-sum-exp, B x heads x S in fp32, both saved with q, k and v.
          const int q = read_as(node, inputs[0], activation_bytes_);
          const int k = read_as(node, inputs[1], activation_bytes_);
          const int v = read_as(node, inputs[2], activation_bytes_);
          out = new_storage(node, out_bytes);
          const Bytes lse = batch_bytes(o.heads * o.shape.front(), 4);
          const AllocId logsumexp = alloc(lse, Tag::activation, o.name);
          if (training) {
            extras_[node] = {logsumexp};
          } else {
            free(logsumexp);
          }
          for (const int saved : {q, k, v, out}) save(saved);
          saved_[node] = {q, k, v, out};
          break;
        }
        case OpKind::matmul: {
          const int a = read_as(node, inputs[0], activation_bytes_);
          const int b = read_as(node, inputs[1], activation_bytes_);
          out = new_storage(node, out_bytes);
          save(a);
          save(b);
          saved_[node] = {a, b};
          break;
        }
        case OpKind::softmax:
          read_as(node, inputs[0], 4);
          out = new_storage(node, out_bytes);
          save(out);
          saved_[node] = {out};
          break;
        case OpKind::pointwise: {
          out = new_storage(node, out_bytes);
          switch (o.pointwise) {
            case Pointwise::scale:
            case Pointwise::shift:
            case Pointwise::where:
              break;
            case Pointwise::pow:
            case Pointwise::gelu:
            case Pointwise::silu:
              saved_[node] = {storage_of_[inputs[0]]};
              break;
            case Pointwise::tanh:
              saved_[node] = {out};
              break;
            case Pointwise::mul:
              saved_[node] = {storage_of_[inputs[0]], storage_of_[inputs[1]]};
              break;
          }
          for (const int storage : saved_[node]) save(storage);
          break;
        }
        case OpKind::contiguous:
          out = new_storage(node, out_bytes);
          break;
        case OpKind::view:
        case OpKind::split:
          out = storage_of_[inputs[0]];
          break;
        case OpKind::loss: {
          if (!options_.training) break;  // inference has no loss
          // log_softmax runs in fp32 under autocast; nll_loss gives a scalar and total_weight.
          const Bytes logits = batch_bytes(op(inputs[0]).elements(), 4);
          int source = storage_of_[inputs[0]];
          if (options_.precision != Precision::fp32) {
            source = new_storage(node, logits);
            ++storages_[source].forward_uses;
          }
          out = new_storage(node, logits);  // log_softmax output, saved
          save(out);
          saved_[node] = {out};
          if (source != storage_of_[inputs[0]]) {
            --storages_[source].forward_uses;
            release_if_dead(source);
          }
          extras_[node] = {alloc(4, Tag::temp, o.name), alloc(4, Tag::temp, o.name)};  // loss, total_weight
          break;
        }
      }
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
  }

  int readers(Node node, int recomputing) const {
    if (recomputing < 0) return static_cast<int>(boost::out_degree(node, graph_));
    int count = 0;
    for (const Edge edge : boost::make_iterator_range(boost::out_edges(node, graph_))) {
      if (op(boost::target(edge, graph_)).unit == recomputing) ++count;
    }
    return count;
  }

  // ---- backward ---------------------------------------------------------------------
  int new_grad(Node node, Bytes bytes) {
    grad_pool_.push_back(Grad{alloc(bytes, Tag::gradient, op(node).name), 1});
    return static_cast<int>(grad_pool_.size() - 1);
  }

  void drop(int grad) {
    if (--grad_pool_[grad].references == 0) free(grad_pool_[grad].id);
  }

  // A gradient arriving for `node`'s output: the first is kept; a second is summed into a
  // new tensor and both operands dropped (autograd's out-of-place accumulation).
  void contribute(Node node, int grad) {
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

  // AccumulateGrad: the first gradient of a parameter becomes its .grad; later ones are
  // added in place and freed.
  void parameter_grads(Node node) {
    if (!trainable(node)) return;
    const Node owner_of_params = parameter_owner(node);
    std::size_t index = 0;
    for (const auto& [owner, weight] : weights_) {
      if (owner != owner_of_params) {
        ++index;
        continue;
      }
      (void)weight;
      const std::size_t which = params_seen_[owner]++;
      const std::int64_t elements = op(owner).params[which];
      if (rank_ && rank_->shards_gradients()) {  // kept until the unit's reduce-scatter
        rank_->parameter_grad(owner, which, elements);
        ++index;
        continue;
      }
      AllocId grad{};
      if (rank_) {  // ZeRO-1: the module's own dtype
        grad = alloc(static_cast<Bytes>(elements) * activation_bytes_, Tag::gradient, op(node).name);
      } else if (options_.precision != Precision::fp32 && (op(node).kind == OpKind::conv || op(node).kind == OpKind::linear)) {
        const AllocId half = alloc(static_cast<Bytes>(elements) * 2, Tag::gradient, op(node).name);
        grad = alloc(static_cast<Bytes>(elements) * 4, Tag::gradient, op(node).name);  // back to the fp32 param
        free(half);
      } else {
        grad = alloc(static_cast<Bytes>(elements) * 4, Tag::gradient, op(node).name);
      }
      if (grads_[index]) {
        free(grad);
      } else {
        grads_[index] = grad;
      }
      ++index;
    }
    params_seen_[owner_of_params] = 0;
  }

  // The gradient of input `i` as the op read it; one read through an autocast copy goes
  // back through the cast (ToCopyBackward) to the input's own dtype.
  int input_grad(Node node, std::size_t i, Node input) {
    return new_grad(node, bytes_of(input, read_as_[node][i]));
  }
  void pass_back(Node node, std::size_t i, Node input, int grad) {
    if (read_as_[node].size() > i && read_as_[node][i] != dtype_[input] && requires_grad_[input]) {
      const int back = new_grad(node, output_bytes(input));
      drop(grad);
      grad = back;
    }
    contribute(input, grad);
  }

  // Backward of a part (a slice or a select): a zero gradient of the whole, the part's copied in.
  void part_back(Node node, Node input, int grad_out) {
    if (op(node).elements() == op(input).elements()) {
      contribute(input, grad_out);  // a reshape or permute of the gradient: a view
      return;
    }
    const int whole = new_grad(node, output_bytes(input));
    drop(grad_out);
    contribute(input, whole);
  }

  // Tensor.split's backward waits for every part's gradient, then concatenates them.
  void split_back(Node input, int grad_out) {
    std::vector<int>& parts = split_parts_[input];
    parts.push_back(grad_out);
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

  void unsave_all(Node node) {
    for (const int storage : saved_[node]) unsave(storage);
  }

  // MatMul4Bit's backward: the gradient back to the compute dtype (out.to's backward), the
  // weight dequantized again, grad_A = grad @ W, the weight freed; a frozen base has no
  // weight gradient.
  void nf4_linear_back(Node node, Node input, int grad_out) {
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

  void backward() {
    const auto vertices = boost::vertices(graph_);
    std::vector<Node> order(vertices.first, vertices.second);
    std::reverse(order.begin(), order.end());
    int recomputed = -1;
    for (const Node node : order) {
      const ModelOp& o = op(node);
      if (rank_) rank_->backward_op(node);  // gathers the unit (before a checkpointed unit reruns)
      if (checkpointed(node) && o.unit != recomputed) {
        if (recomputed >= 0) release_unit_inputs(recomputed);
        recomputed = o.unit;
        recompute(o.unit);
      }
      if (!checkpointed(node) && recomputed >= 0) {
        release_unit_inputs(recomputed);
        recomputed = -1;
      }
      if (!requires_grad_[node]) continue;  // the batch, the attention mask
      cublas_call(node, backward_cublas_);  // on autograd's device thread: a handle of its own
      const std::vector<Node> inputs = inputs_of(node);
      const Bytes in_bytes = inputs.empty() ? 0 : batch_bytes(op(inputs[0]).elements(), activation_bytes_);
      int grad_out = grad_of_[node];
      if (o.kind == OpKind::loss) {
        const int seed = new_grad(node, 4);  // d loss / d loss = 1
        const int nll = new_grad(node, batch_bytes(op(inputs[0]).elements(), 4));
        drop(seed);
        grad_out = new_grad(node, batch_bytes(op(inputs[0]).elements(), 4));  // log_softmax_backward
        drop(nll);
        if (options_.precision != Precision::fp32) {
          const int half = new_grad(node, in_bytes);
          drop(grad_out);
          grad_out = half;
        }
        for (const AllocId extra : extras_[node]) free(extra);
        unsave(saved_[node][0]);
        contribute(inputs[0], grad_out);
        continue;
      }
      if (grad_out == kNone) throw Error("lowering " + model_.name + ": no gradient reached " + o.name);
      switch (o.kind) {
        case OpKind::conv: {
          const bool needs_input_grad = op(inputs[0]).kind != OpKind::input;
          const Bytes out_bytes = batch_bytes(o.elements(), activation_bytes_);
          int grad_in = kNone;
          if (needs_input_grad) {
            workspace(node, in_bytes, out_bytes, ConvPass::backward_input);
            grad_in = new_grad(node, in_bytes);
          }
          workspace(node, in_bytes, out_bytes, ConvPass::backward_weight);
          parameter_grads(node);
          drop(grad_out);
          for (const AllocId cast : cast_of_[node]) free(cast);
          cast_of_[node].clear();
          unsave(saved_[node][0]);
          if (needs_input_grad) contribute(inputs[0], grad_in);
          break;
        }
        case OpKind::linear: {
          if (o.nf4) {
            nf4_linear_back(node, inputs[0], grad_out);
            break;
          }
          const bool needs_input_grad = requires_grad_[inputs[0]];
          const int grad_in = needs_input_grad ? input_grad(node, 0, inputs[0]) : kNone;
          parameter_grads(node);
          drop(grad_out);
          for (const AllocId cast : cast_of_[node]) free(cast);
          cast_of_[node].clear();
          unsave_all(node);
          if (needs_input_grad) pass_back(node, 0, inputs[0], grad_in);
          break;
        }
        case OpKind::embedding:  // embedding_dense_backward: a gradient for the whole table
          parameter_grads(node);
          drop(grad_out);
          break;
        case OpKind::layernorm: {
          const int grad_in = input_grad(node, 0, inputs[0]);
          parameter_grads(node);
          drop(grad_out);
          for (const AllocId extra : extras_[node]) free(extra);
          unsave_all(node);
          pass_back(node, 0, inputs[0], grad_in);
          break;
        }
        case OpKind::rmsnorm: {
          // grad * weight, then mul's and rsqrt's and pow's gradients summed into the input's;
          // the weight's is (grad * normed).sum over rows.
          const Bytes full = bytes_of(node, 4);
          const AllocId scaled = alloc(full, Tag::gradient, o.name);
          const int grad_in = input_grad(node, 0, inputs[0]);
          const AllocId product = alloc(full, Tag::gradient, o.name);
          parameter_grads(node);
          free(product);
          free(scaled);
          drop(grad_out);
          for (const AllocId extra : extras_[node]) free(extra);
          unsave_all(node);
          pass_back(node, 0, inputs[0], grad_in);
          break;
        }
        case OpKind::rope: {
          const AllocId rotated = alloc(output_bytes(node), Tag::gradient, o.name);
          const int grad_in = new_grad(node, output_bytes(inputs[0]));
          free(rotated);
          drop(grad_out);
          contribute(inputs[0], grad_in);
          break;
        }
        case OpKind::attention: {
          // The backward kernel's fp32 dq accumulator and softmax_d (B x heads x S) beside the
          // three gradients.
          const Bytes rows = batch_bytes(o.heads * o.shape.front(), 4);
          const AllocId softmax_d = alloc(rows, Tag::gradient, o.name);
          const AllocId dq_accum = alloc(bytes_of(inputs[0], 4), Tag::gradient, o.name);
          std::vector<int> grads;
          for (std::size_t i = 0; i < inputs.size(); ++i) grads.push_back(input_grad(node, i, inputs[i]));
          free(dq_accum);
          free(softmax_d);
          drop(grad_out);
          for (const AllocId extra : extras_[node]) free(extra);
          unsave_all(node);
          for (std::size_t i = 0; i < inputs.size(); ++i) pass_back(node, i, inputs[i], grads[i]);
          break;
        }
        case OpKind::matmul:
        case OpKind::softmax: {
          std::vector<int> grads;
          for (std::size_t i = 0; i < inputs.size(); ++i) grads.push_back(input_grad(node, i, inputs[i]));
          drop(grad_out);
          unsave_all(node);
          for (std::size_t i = 0; i < inputs.size(); ++i) pass_back(node, i, inputs[i], grads[i]);
          break;
        }
        case OpKind::pointwise: {
          if (o.pointwise == Pointwise::shift) {  // x + c: the gradient passes on unchanged
            contribute(inputs[0], grad_out);
            break;
          }
          std::vector<int> grads;
          const std::size_t operands = o.pointwise == Pointwise::mul ? 2 : 1;
          for (std::size_t i = 0; i < operands; ++i) {
            grads.push_back(requires_grad_[inputs[i]] ? new_grad(node, output_bytes(inputs[i])) : kNone);
          }
          drop(grad_out);
          unsave_all(node);
          for (std::size_t i = 0; i < operands; ++i) {
            if (grads[i] != kNone) contribute(inputs[i], grads[i]);
          }
          break;
        }
        case OpKind::contiguous:
        case OpKind::view:
          part_back(node, inputs[0], grad_out);
          break;
        case OpKind::split:
          split_back(inputs[0], grad_out);
          break;
        case OpKind::batchnorm: {
          const int grad_in = new_grad(node, in_bytes);
          parameter_grads(node);
          drop(grad_out);
          for (const AllocId extra : extras_[node]) free(extra);
          unsave(saved_[node][0]);
          contribute(inputs[0], grad_in);
          break;
        }
        case OpKind::relu:
        case OpKind::maxpool:
        case OpKind::avgpool:
        case OpKind::dropout: {
          const int grad_in = new_grad(node, output_bytes(inputs[0]));
          drop(grad_out);
          for (const AllocId extra : extras_[node]) free(extra);
          for (const int saved : saved_[node]) unsave(saved);
          contribute(inputs[0], grad_in);
          break;
        }
        case OpKind::flatten:
          contribute(inputs[0], grad_out);  // a view: the same tensor flows on
          break;
        case OpKind::add:
          if (op(inputs[1]).batched != o.batched) {  // a broadcast operand's gradient is summed over the batch
            const int reduced = new_grad(node, output_bytes(inputs[1]));
            contribute(inputs[0], grad_out);
            contribute(inputs[1], reduced);
            break;
          }
          ++grad_pool_[grad_out].references;  // both inputs receive the same tensor
          contribute(inputs[0], grad_out);
          contribute(inputs[1], grad_out);
          break;
        case OpKind::input:
        case OpKind::loss:
          break;
      }
      extras_[node].clear();
      saved_[node].clear();
      grad_of_[node] = kNone;
    }
    if (recomputed >= 0) release_unit_inputs(recomputed);
    if (rank_) rank_->end_backward();
    storages_.clear();
    grad_pool_.clear();
  }

  // ---- optimizer --------------------------------------------------------------------
  using OptimizerTensor = ShardedRank::OptimizerTensor;

  // What the optimizer updates: each trainable parameter, or a sharded rank's shards.
  std::vector<OptimizerTensor> optimizer_tensors() {
    if (rank_) return rank_->optimizer_tensors();
    std::vector<OptimizerTensor> tensors;
    std::map<Node, std::size_t> seen;
    for (const auto& [node, weight] : weights_) {
      (void)weight;
      const std::int64_t elements = op(node).params[seen[node]++];
      if (!op(node).frozen) tensors.push_back(OptimizerTensor{op(node).name, elements, 0});  // frozen: no state
    }
    return tensors;
  }

  // bitsandbytes' Optimizer2State.init_state: state1 and state2 (uint8 with an fp32 absmax
  // each for 8-bit, fp32 for 32-bit or a tensor below min_8bit_size); the dynamic maps come
  // to the device with the first 8-bit tensor. Paged state of a large tensor is unified
  // memory, which PyTorch's allocator never sees.
  void bnb_adam_init(const OptimizerTensor& tensor) {
    const Optimizer o = options_.optimizer;
    const bool eight_bit = o == Optimizer::adamw8bit || o == Optimizer::paged_adamw8bit;
    const bool paged = o == Optimizer::paged_adamw8bit || o == Optimizer::paged_adamw32bit;
    const OptimizerStateLayout layout = bnb_adam_state(tensor.elements, eight_bit, paged);
    if (layout.absmax > 0 && !optimizer_maps_) {
      alloc(kDynamicMapBytes, Tag::optimizer, "bitsandbytes.qmap1");
      alloc(kDynamicMapBytes, Tag::optimizer, "bitsandbytes.qmap2");
      optimizer_maps_ = true;
    }
    for (int state = 0; state < 2; ++state) {
      if (!layout.paged) alloc(layout.state, Tag::optimizer, tensor.name);
    }
    for (int state = 0; state < 2 && layout.absmax > 0; ++state) alloc(layout.absmax, Tag::optimizer, tensor.name);
  }

  void optimizer_step(int step) {
    std::vector<AllocId> temporaries;
    const bool amp = options_.precision != Precision::fp32;
    AllocId found_inf{};
    if (amp) {
      if (step == 0) alloc(4, Tag::optimizer, "grad_scaler");  // the scale, kept
      found_inf = alloc(4, Tag::temp, "grad_scaler");
    }
    for (const OptimizerTensor& tensor : optimizer_tensors()) {
      const Bytes bytes = static_cast<Bytes>(tensor.elements) * 4;
      const std::string& name = tensor.name;
      const std::optional<AllocId> upcast =
          tensor.upcast_grad > 0 ? std::optional(alloc(tensor.upcast_grad, Tag::temp, name)) : std::nullopt;
      switch (options_.optimizer) {
        case Optimizer::sgd:
          break;
        case Optimizer::momentum:
          if (step == 0) alloc(bytes, Tag::optimizer, name);  // momentum_buffer = grad.clone()
          break;
        case Optimizer::adam:
        case Optimizer::adamw:
          if (step == 0) {  // exp_avg, exp_avg_sq
            alloc(bytes, Tag::optimizer, name);
            alloc(bytes, Tag::optimizer, name);
          }
          if (options_.fused || tf_) break;
          if (options_.for_loop) {  // _single_tensor_adam: denom = (exp_avg_sq.sqrt() / bc2_sqrt).add_(eps)
            const AllocId root = alloc(bytes, Tag::temp, name);
            const AllocId denom = alloc(bytes, Tag::temp, name);
            free(root);
            free(denom);  // after param.addcdiv_(exp_avg, denom)
          } else {
            temporaries.push_back(alloc(bytes, Tag::temp, name));  // _foreach_sqrt, for every parameter at once
          }
          break;
        case Optimizer::adamw8bit:
        case Optimizer::adamw32bit:
        case Optimizer::paged_adamw8bit:
        case Optimizer::paged_adamw32bit:
          if (step == 0) bnb_adam_init(tensor);
          break;  // one fused kernel per parameter, in place
      }
      if (upcast) free(*upcast);
    }
    for (const AllocId temporary : temporaries) free(temporary);
    if (amp) free(found_inf);
    if (tf_) {  // apply_gradients has consumed the tape's gradients
      for (auto& grad : grads_) {
        if (grad) free(*grad);
        grad.reset();
      }
    }
  }

  // The next micro-batch's shapes: its graph has the same ops in the same order, so every
  // per-op table stays valid; only sizes and the labels per sample change.
  void reshape(const Model& shaped) {
    graph_ = shaped.graph;
    for (const Node node : boost::make_iterator_range(boost::vertices(graph_))) {
      if (op(node).kind == OpKind::loss) labels_ = op(node).labels;
    }
  }

  const Model& model_;
  ModelGraph graph_;  // a copy: reshape() replaces it
  LoweringOptions options_;
  bool tf_ = options_.framework == Framework::tf;
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

Trace lower_model(const Model& model, const LoweringOptions& options, std::string name) {
  return Lowering(model, options, std::move(name)).run();
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
  return Lowering(shapes.front(), options, std::move(name), shapes).run();
}

}  // namespace allocsim
