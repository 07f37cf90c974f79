#include "workloads/model/sharding.hpp"

#include <algorithm>
#include <map>

#include "sim/error.hpp"

namespace allocsim {
namespace {

bool has_parameters(const ModelOp& op) { return !op.params.empty() || op.tied_to.has_value(); }

}  // namespace

std::int64_t ShardUnit::padded() const { return shard * world; }

ShardPlan plan_shards(const Model& model, Sharding sharding, std::int64_t world) {
  if (world < 1) throw Error("workload " + model.name + ": world must be at least 1");
  const ModelGraph& graph = model.graph;
  const std::size_t ops = boost::num_vertices(graph);
  ShardPlan plan;
  plan.unit_of.assign(ops, -1);
  std::map<int, int> layer_unit;   // checkpoint unit (decoder layer) -> shard unit
  std::map<Node, int> owner_unit;  // ZeRO: a module outside the layers -> its unit
  const auto new_unit = [&](std::string name) {
    plan.units.push_back(ShardUnit{std::move(name), 0, 0, world});
    return static_cast<int>(plan.units.size() - 1);
  };
  for (const Node node : boost::make_iterator_range(boost::vertices(graph))) {
    const ModelOp& op = graph[node];
    if (!op.params.empty() && op.frozen) {
      throw Error("workload " + model.name + ": sharding with frozen parameters (lora, qlora) is not modelled");
    }
    int unit = -1;
    if (op.unit >= 0) {
      const auto [at, made] = layer_unit.try_emplace(op.unit, -1);
      if (made) at->second = new_unit("model.layers." + std::to_string(op.unit));
      unit = at->second;
    } else if (has_parameters(op)) {
      if (sharding == Sharding::fsdp) {
        if (plan.root < 0) plan.root = new_unit("root");
        unit = plan.root;
      } else {
        const Node owner = op.tied_to ? static_cast<Node>(*op.tied_to) : node;
        const auto [at, made] = owner_unit.try_emplace(owner, -1);
        if (made) at->second = new_unit(graph[owner].name);
        unit = at->second;
      }
    }
    plan.unit_of[node] = unit;
    if (unit < 0) continue;
    for (const std::int64_t elements : op.params) plan.units[static_cast<std::size_t>(unit)].elements += elements;
    if (plan.forward_order.empty() || plan.forward_order.back() != unit) plan.forward_order.push_back(unit);
  }
  for (ShardUnit& unit : plan.units) unit.shard = (unit.elements + world - 1) / world;
  return plan;
}

ShardedRank::ShardedRank(const Model& model, Sharding sharding, std::int64_t world, Bytes compute_bytes, Alloc alloc,
                         Free free)
    : plan_(plan_shards(model, sharding, world)),
      sharding_(sharding),
      compute_bytes_(compute_bytes),
      alloc_(std::move(alloc)),
      free_(std::move(free)),
      gathers_(sharding == Sharding::zero3 || sharding == Sharding::fsdp) {
  const std::size_t units = plan_.units.size();
  gathered_.assign(units, std::nullopt);
  grad_shard_.assign(units, std::nullopt);
  pending_.assign(units, {});
  backward_left_.assign(units, 0);
  backward_order_.assign(plan_.forward_order.rbegin(), plan_.forward_order.rend());
  parameter_ops_.assign(units, 0);
  has_parameters_.assign(plan_.unit_of.size(), false);
  for (const Node node : boost::make_iterator_range(boost::vertices(model.graph))) {
    if (has_parameters(model.graph[node]) && plan_.unit_of[node] >= 0) {
      ++parameter_ops_[static_cast<std::size_t>(plan_.unit_of[node])];
      has_parameters_[node] = true;
    }
  }
}

void ShardedRank::allocate_parameters() {
  const bool mixed = compute_bytes_ != 4;
  for (const ShardUnit& unit : plan_.units) {
    const Bytes shard = static_cast<Bytes>(unit.shard);
    if (sharding_ == Sharding::fsdp) {
      alloc_(shard * 4, Tag::weight, unit.name + ".flat_param_shard");
      continue;
    }
    if (sharding_ == Sharding::zero3) alloc_(shard * compute_bytes_, Tag::weight, unit.name + ".partition");
    if (mixed) alloc_(shard * 4, Tag::weight, unit.name + ".fp32_partition");
  }
}

void ShardedRank::gather(int unit) {
  auto& gathered = gathered_[static_cast<std::size_t>(unit)];
  if (!gathers_ || gathered) return;
  const ShardUnit& u = plan_.units[static_cast<std::size_t>(unit)];
  std::optional<AllocId> cast;
  if (sharding_ == Sharding::fsdp && compute_bytes_ != 4) {  // _mp_shard: the fp32 shard in param_dtype
    cast = alloc_(static_cast<Bytes>(u.shard) * compute_bytes_, Tag::weight, u.name + ".mp_shard");
  }
  gathered = alloc_(static_cast<Bytes>(u.padded()) * compute_bytes_, Tag::weight, u.name + ".all_gather");
  if (cast) free_(*cast);
}

void ShardedRank::reshard(int unit) {
  auto& gathered = gathered_[static_cast<std::size_t>(unit)];
  if (!gathered) return;
  free_(*gathered);
  gathered.reset();
}

void ShardedRank::enter(int unit, const std::vector<int>& order, std::size_t position) {
  current_ = unit;
  gather(unit);
  if (position + 1 < order.size()) gather(order[position + 1]);  // prefetch the next unit
}

void ShardedRank::forward_op(Node node) {
  const int unit = plan_.unit_of[node];
  if (unit < 0 || unit == current_) return;
  if (current_ >= 0) {
    if (current_ != plan_.root) reshard(current_);
    ++position_;
  }
  enter(unit, plan_.forward_order, position_);
}

void ShardedRank::end_forward() {
  if (current_ >= 0 && current_ != plan_.root) reshard(current_);
  current_ = -1;
  position_ = 0;
  for (std::size_t u = 0; u < backward_left_.size(); ++u) backward_left_[u] = parameter_ops_[u];
}

void ShardedRank::backward_op(Node node) {
  const int unit = plan_.unit_of[node];
  if (unit < 0) return;
  const bool counts = has_parameters_[node];
  if (unit != current_) {
    if (current_ >= 0) {
      leave_backward(current_);
      ++position_;
    }
    enter(unit, backward_order_, position_);
  }
  if (counts) --backward_left_[static_cast<std::size_t>(unit)];
}

void ShardedRank::leave_backward(int unit) {
  if (backward_left_[static_cast<std::size_t>(unit)] == 0) {
    reduce_scatter(unit);
    reshard(unit);
  } else if (unit != plan_.root) {
    reshard(unit);  // a unit used again later (a tied head's embedding) is gathered again then
  }
}

void ShardedRank::end_backward() {
  if (current_ >= 0) leave_backward(current_);
  for (std::size_t u = 0; u < plan_.units.size(); ++u) {
    reduce_scatter(static_cast<int>(u));
    reshard(static_cast<int>(u));
  }
  current_ = -1;
  position_ = 0;
}

void ShardedRank::parameter_grad(Node owner, std::size_t index, std::int64_t elements) {
  const int unit = plan_.unit_of[owner];
  auto& pending = pending_[static_cast<std::size_t>(unit)];
  const Bytes bytes = static_cast<Bytes>(elements) * compute_bytes_;
  const std::string& name = plan_.units[static_cast<std::size_t>(unit)].name;
  const bool seen = std::any_of(pending.begin(), pending.end(),
                                [&](const Pending& p) { return p.owner == owner && p.index == index; });
  if (seen) {
    free_(alloc_(bytes, Tag::gradient, name));  // a second use's gradient, added in place
    return;
  }
  pending.push_back(Pending{owner, index, alloc_(bytes, Tag::gradient, name)});
}

void ShardedRank::reduce_scatter(int unit) {
  auto& pending = pending_[static_cast<std::size_t>(unit)];
  if (pending.empty()) return;
  const ShardUnit& u = plan_.units[static_cast<std::size_t>(unit)];
  const AllocId input = alloc_(static_cast<Bytes>(u.padded()) * compute_bytes_, Tag::gradient, u.name + ".reduce_scatter");
  for (const Pending& p : pending) free_(p.id);
  pending.clear();
  AllocId shard = alloc_(static_cast<Bytes>(u.shard) * compute_bytes_, Tag::gradient, u.name + ".grad_shard");
  free_(input);
  if (sharding_ == Sharding::fsdp && compute_bytes_ != 4) {  // back to the fp32 flat parameter's dtype
    const AllocId full = alloc_(static_cast<Bytes>(u.shard) * 4, Tag::gradient, u.name + ".grad_shard");
    free_(shard);
    shard = full;
  }
  auto& kept = grad_shard_[static_cast<std::size_t>(unit)];
  if (kept) {
    free_(shard);  // a later micro-batch: added into the kept shard
  } else {
    kept = shard;
  }
}

void ShardedRank::zero_grad() {
  for (auto& shard : grad_shard_) {
    if (shard) free_(*shard);
    shard.reset();
  }
}

std::vector<ShardedRank::OptimizerTensor> ShardedRank::optimizer_tensors() const {
  std::vector<OptimizerTensor> tensors;
  const bool upcast = sharding_ != Sharding::fsdp && compute_bytes_ != 4;
  for (const ShardUnit& unit : plan_.units) {
    if (unit.elements == 0) continue;
    tensors.push_back(OptimizerTensor{unit.name, unit.shard, upcast ? static_cast<Bytes>(unit.shard) * 4 : 0});
  }
  return tensors;
}

}  // namespace allocsim
