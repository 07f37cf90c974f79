// One rank of sharded data parallelism: DeepSpeed's ZeRO stages 1-3 (zero=S,world=N) and
// PyTorch FSDP's FULL_SHARD (fsdp=N), as the trace of the rank's own allocations.
//
// - Units: each decoder layer is one (FSDP's transformer_auto_wrap_policy wraps every
//   LlamaDecoderLayer / GPT2Block); the parameters outside the layers are one more, the root
//   (FSDP), or one unit per module that owns them (ZeRO: embed_tokens, norm, lm_head: DeepSpeed
//   fetches each submodule's parameters when it runs). A unit's n parameters are padded to a
//   multiple of N; this rank holds ceil(n / N) of them (a shard).
// - What each stage shards, per rank, under mixed precision (p = 2 bytes; fp32: p = 4, no
//   separate master):
//     zero=1: the module's parameters (p bytes each) and their gradients whole; fp32 master
//             parameters and optimizer state by shard.
//     zero=2: also the gradients: each unit's gradients are reduce-scattered when its backward
//             ends, and the rank keeps its shard (p bytes).
//     zero=3: also the parameters: a shard in p bytes (DeepSpeed's ds_tensor) beside the fp32
//             master shard; a unit is all-gathered (full, p bytes) before it runs, freed after.
//     fsdp:   the flat parameter's fp32 shard is the master; a unit is all-gathered in p bytes
//             (MixedPrecision(param_dtype)): the shard cast first (_mp_shard), then the
//             gather; the reduce-scattered gradient is cast back to an fp32 shard. The root
//             stays gathered from its forward to the end of backward (FSDP does not reshard
//             the root after forward).
// - Prefetch: entering a unit also gathers the next one (forward_prefetch, backward_prefetch=
//   BACKWARD_PRE; DeepSpeed's prefetch bucket), so two gathered units are alive at once.
// - Reduce-scatter, per unit at the end of its backward: its gradients (p bytes each, as
//   autograd made them) are copied into one input buffer of the padded unit, freed, and the
//   rank's shard is the output; a later micro-batch adds into the shard kept.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "sim/trace.hpp"
#include "workloads/model/graph.hpp"

namespace allocsim {

enum class Sharding : std::uint8_t { none, zero1, zero2, zero3, fsdp };

struct ShardUnit {
  std::string name;             // "model.layers.3", "model.embed_tokens", "root"
  std::int64_t elements = 0;    // its parameters
  std::int64_t shard = 0;       // what one rank holds: ceil(elements / world)
  std::int64_t padded() const;  // shard x world: the gathered (all-gather output) size
  std::int64_t world = 1;
};

struct ShardPlan {
  std::vector<ShardUnit> units;
  std::vector<int> unit_of;        // by op: the unit whose parameters it uses, or -1
  std::vector<int> forward_order;  // the units as forward enters them (a unit may come back: a tied head)
  int root = -1;                   // FSDP's root unit, kept gathered; -1 under ZeRO
};

// Throws Error naming the model for a world below 1 or a frozen parameter (LoRA with sharding
// is not modelled).
ShardPlan plan_shards(const Model& model, Sharding sharding, std::int64_t world);

// The allocations and frees the rank adds to a lowering, through `alloc` and `free`.
class ShardedRank {
 public:
  using Alloc = std::function<AllocId(Bytes, Tag, const std::string&)>;
  using Free = std::function<void(AllocId)>;

  // compute_bytes: the dtype forward computes weights in (2 under amp or bf16, else 4).
  ShardedRank(const Model& model, Sharding sharding, std::int64_t world, Bytes compute_bytes, Alloc alloc, Free free);

  const ShardPlan& plan() const { return plan_; }
  // Whether the module's own parameters are whole in the compute dtype (zero=1, zero=2): their
  // gradients are made in it too, with no fp32 copy.
  bool replicated() const { return sharding_ == Sharding::zero1 || sharding_ == Sharding::zero2; }
  bool shards_gradients() const { return !(sharding_ == Sharding::zero1); }

  // The persistent parameters of this rank (weights_ of an unsharded lowering).
  void allocate_parameters();
  // Forward and backward visit ops in order: each call names the op about to run.
  void forward_op(Node node);
  void end_forward();
  void backward_op(Node node);
  void end_backward();
  // A parameter's gradient, `elements` of op `owner`'s parameter `index` (zero=2, zero=3, fsdp).
  void parameter_grad(Node owner, std::size_t index, std::int64_t elements);
  void zero_grad();  // set_to_none: the gradient shards go

  struct OptimizerTensor {
    std::string name;
    std::int64_t elements = 0;
    Bytes upcast_grad = 0;  // an fp32 copy of the gradient shard the update reads (ZeRO, mixed precision)
  };
  std::vector<OptimizerTensor> optimizer_tensors() const;

 private:
  void enter(int unit, const std::vector<int>& order, std::size_t position);
  void gather(int unit);
  void reshard(int unit);
  void reduce_scatter(int unit);
  void leave_backward(int unit);

  ShardPlan plan_;
  Sharding sharding_;
  Bytes compute_bytes_;
  Alloc alloc_;
  Free free_;
  bool gathers_;                                // zero=3, fsdp
  std::vector<std::optional<AllocId>> gathered_;  // by unit
  std::vector<std::optional<AllocId>> grad_shard_;
  struct Pending {
    Node owner;
    std::size_t index;
    AllocId id;
  };
  std::vector<std::vector<Pending>> pending_;   // by unit: gradients awaiting the reduce-scatter
  std::vector<int> backward_left_;              // by unit: its parameter ops backward has yet to run
  std::vector<int> backward_order_;
  std::vector<int> parameter_ops_;              // by unit: its ops with parameters
  std::vector<bool> has_parameters_;            // by op
  int current_ = -1;
  std::size_t position_ = 0;
};

}  // namespace allocsim
