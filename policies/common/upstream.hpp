// Memory resources stacked the way RMM stacks them: a resource takes its memory from an
// upstream resource (rmm::mr::pool_memory_resource<upstream>), not from the driver. A
// policy spec names its upstream (`rmm-binning:upstream=[rmm-pool:initial=1GiB]`); the
// upstream policy is built on the real device, and the policy above sees it as its device.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string_view>

#include "policies/common/node_pool.hpp"
#include "sim/device.hpp"
#include "sim/made_policy.hpp"
#include "sim/policy.hpp"
#include "sim/spec.hpp"

namespace allocsim {

// An upstream policy seen as a Device: malloc is its allocate, free its deallocate.
// Contract: segments are aligned to kBlockAlignment (256), what RMM's resources promise,
// not to kSegmentAlignment; capacity, used and time are the real device's; no VMM.
class UpstreamDevice final : public Device {
 public:
  UpstreamDevice(Policy& upstream, Device& device) : upstream_(upstream), device_(device) {}

  std::optional<Segment> malloc(Bytes bytes) override;
  void free(Segment segment) override;
  void copy(Addr dst, Addr src, Bytes bytes) override { device_.copy(dst, src, bytes); }
  Bytes capacity() const override { return device_.capacity(); }
  Bytes used() const override { return device_.used(); }
  Bytes granularity() const override { return 1; }  // the upstream rounds as it does
  Nanos elapsed() const override { return device_.elapsed(); }
  int compute_capability() const override { return device_.compute_capability(); }

 private:
  Policy& upstream_;
  Device& device_;
  // What the upstream handed out, to hand back exactly. The map's nodes come from a pool
  // that reuses them, so a steady state allocates nothing (rmm-binning's large requests).
  pooled::NodePool nodes_;
  pooled::map<Addr, Block> blocks_{&nodes_};
  std::uint32_t next_id_ = 0;     // the upstream's own request ids
};

using MakeTopPolicy = std::function<std::unique_ptr<Policy>(Device& device)>;

// A policy over an upstream policy: requests go to the top one, which takes its memory
// from the upstream; reserved bytes are the upstream's (what the device holds).
class LayeredPolicy final : public Policy {
 public:
  LayeredPolicy(std::unique_ptr<Policy> upstream, Device& device, const MakeTopPolicy& make_top);

  Allocation allocate(const Request& request) override { return top_->allocate(request); }
  void deallocate(const Block& block, Nanos now) override { top_->deallocate(block, now); }
  PolicyStats stats() const override;
  PolicyInspection inspect(Detail detail) const override;
  void release_cached() override;
  void synchronize(const Sync& sync, Nanos now) override;
  void prepare(const ReplaySetup& setup) override { top_->prepare(setup); }
  void check() const override;

 private:
  // Destroyed in reverse: the top returns its memory to the upstream before it goes.
  std::unique_ptr<Policy> upstream_;
  UpstreamDevice device_;
  std::unique_ptr<Policy> top_;
};

// The `upstream` parameter of a resource that takes its memory from another (RMM's pool
// and arena), read by read_upstream.
inline constexpr ParamInfo kUpstreamParam{
    "upstream", ParamKind::text, "cuda",
    "the resource it takes memory from: cuda (the device) or a policy spec in [...]"};

// The policy a spec's `upstream` value names, read and checked once; empty for "" or "cuda"
// (cuda_memory_resource: the device itself). One pair of brackets around it is dropped.
MakePolicy read_upstream(std::string_view spec);

}  // namespace allocsim
