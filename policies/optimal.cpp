#include "policies/optimal.hpp"

#include <string>

#include "policies/placement.hpp"
#include "sim/error.hpp"

namespace allocsim {

OptimalPolicy::Settings OptimalPolicy::settings(const Params& params) {
  Settings settings;
  settings.max_pairs = params.count("max_pairs");
  return settings;
}

OptimalPolicy::OptimalPolicy(const Settings& settings, Device& device) : device_(device), options_(settings) {
  unplanned_ = std::make_unique<SizeFitPolicy>(
      Fit::best, placement_settings(Params(Spec{"bestfit", {}}, kPlacementParams, "policy optimal")), device);
}

OptimalPolicy::~OptimalPolicy() {
  if (arena_) device_.free(*arena_);
}

void OptimalPolicy::prepare(const ReplaySetup& setup) {
  if (setup.streamed) {
    throw Error("optimal plans over the whole trace, which a streamed replay never holds: replay it without "
                "--stream (the trace is then loaded into memory)");
  }
  const Trace* const trace = setup.whole_trace ? setup.whole_trace() : nullptr;
  if (!trace) return;  // no trace ahead: it stays bestfit
  if (unplanned_ && unplanned_->stats().allocated != 0) throw Error("optimal: prepare() after requests were served");
  unplanned_.reset();
  trace_ = trace;
  plan_ = plan_offline(*trace, options_);
}

Allocation OptimalPolicy::allocate(const Request& request) {
  if (unplanned_) return unplanned_->allocate(request);
  const std::uint32_t i = index_of(request.id);
  const Bytes size = align_up(request.bytes, options_.alignment);
  if (i >= plan_->offset.size() || size != plan_->size(*trace_, i)) {
    throw Error("optimal: request " + std::to_string(i) + " of " + format_bytes(request.bytes) +
                " is not in the planned trace");
  }
  if (!arena_ && plan_->arena > 0) {
    arena_ = device_.malloc(plan_->arena);
    if (!arena_) return std::nullopt;
  }
  const Addr base = arena_ ? arena_->addr : 0;  // an arena of 0 bytes serves only empty blocks
  allocated_ += size;
  return Block{base + plan_->offset[i], size, request.bytes, request.id, request.stream};
}

void OptimalPolicy::deallocate(const Block& block, Nanos now) {
  if (unplanned_) return unplanned_->deallocate(block, now);
  allocated_ -= block.size;
}

PolicyStats OptimalPolicy::stats() const {
  if (unplanned_) return unplanned_->stats();
  const Bytes reserved = arena_ ? arena_->bytes : 0;
  // The free space of a planned arena is not one list; nothing unplanned can be served.
  return PolicyStats{.allocated = allocated_, .reserved = reserved, .largest_free = 0};
}

void OptimalPolicy::release_cached() {
  if (unplanned_) return unplanned_->release_cached();
  if (!arena_ || allocated_ != 0) return;
  device_.free(*arena_);
  arena_.reset();
}

void OptimalPolicy::check() const {
  if (unplanned_) return unplanned_->check();
  if (allocated_ > (arena_ ? arena_->bytes : 0)) throw Error("optimal: more allocated than the arena holds");
}

PolicyInspection OptimalPolicy::inspect(Detail detail) const {
  PolicyInspection inspection;
  if (unplanned_) {
    inspection.releasable = unplanned_->inspect(Detail::counters).releasable;
    if (detail == Detail::full) inspection.state = "optimal without a plan: bestfit over one region";
    return inspection;
  }
  const Bytes reserved = arena_ ? arena_->bytes : 0;
  inspection.releasable = allocated_ == 0 ? reserved : 0;
  inspection.planned_reserve = plan_->arena;
  inspection.extra = {PolicyStat{"plan_arena_bytes", plan_->arena, Unit::bytes},
                      PolicyStat{"plan_aligned_lower_bound_bytes", plan_->aligned_lower_bound, Unit::bytes},
                      PolicyStat{"plan_overlapping_pairs", plan_->pairs, Unit::count}};
  if (detail == Detail::full) {
    inspection.state = "optimal: arena of " + format_bytes(plan_->arena) + " planned by " + plan_->heuristic + " for " +
                       std::to_string(plan_->offset.size()) + " allocations (" +
                       format_bytes(plan_->aligned_lower_bound) + " live at most, sizes aligned)";
  }
  return inspection;
}

}  // namespace allocsim
