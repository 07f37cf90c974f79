// optimal: an offline planner, the best any allocator that never moves a block could do
// (up to the heuristic). It is no real allocator; it is the yardstick that static memory
// planners (TFLite's arena planner, XLA's buffer assignment) approach.
// - before replay the engine hands it the whole trace (Policy::prepare); it gives every
//   allocation an offset in one arena with the heuristics of policies/common/offline_plan
//   (greedy by size, breadth, lifetime, area; online best fit) and keeps the smallest;
// - the first request takes the arena, of exactly the planned size, from the device;
//   each request is served at its planned offset, in O(1);
// - release_cached() returns the arena once nothing is live;
// - driven without a plan (unit tests drive a policy request by request), it is bestfit
//   over one region.
// Its peak reserved is never below the live lower bound; the gap is the price of
// sizes rounded to 256 B and of the heuristic.
#pragma once

#include <array>
#include <memory>
#include <optional>

#include "policies/common/offline_plan.hpp"
#include "sim/device.hpp"
#include "sim/policy.hpp"
#include "sim/spec.hpp"

namespace allocsim {

class OptimalPolicy final : public Policy {
 public:
  static constexpr std::array kParams{
      ParamInfo{"max_pairs", ParamKind::count, "30000000",
                "run the greedy heuristics when at most this many pairs of allocations overlap in time "
                "(their cost); above it, online best fit alone plans"},
  };

  using Settings = OfflinePlanOptions;  // what a spec sets
  static Settings settings(const Params& params);  // throws Error naming a bad value

  OptimalPolicy(const Settings& settings, Device& device);
  ~OptimalPolicy() override;

  void prepare(const ReplaySetup& setup) override;
  Allocation allocate(const Request& request) override;
  void deallocate(const Block& block, Nanos now) override;
  PolicyStats stats() const override;
  void release_cached() override;
  Bytes rounded_size(Bytes requested) const override {
    return unplanned_ ? unplanned_->rounded_size(requested) : align_up(requested, options_.alignment);
  }
  void check() const override;
  PolicyInspection inspect(Detail detail) const override;

 private:
  Device& device_;
  OfflinePlanOptions options_;
  const Trace* trace_ = nullptr;  // the planned one, the source's: it outlives the replay
  std::optional<OfflinePlan> plan_;
  std::unique_ptr<Policy> unplanned_;  // bestfit, until prepare() hands it a trace
  std::optional<Segment> arena_;
  Bytes allocated_ = 0;
};

}  // namespace allocsim
