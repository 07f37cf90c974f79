#include "policies/common/upstream.hpp"

#include <algorithm>
#include <string>

#include "policies/registry.hpp"
#include "sim/error.hpp"

namespace allocsim {

std::optional<Segment> UpstreamDevice::malloc(Bytes bytes) {
  const Allocation got = upstream_.allocate(Request{static_cast<AllocId>(next_id_++), bytes, 0, device_.elapsed()});
  if (!got) return std::nullopt;
  blocks_.emplace(got->addr, *got);
  return Segment{got->addr, bytes};
}

void UpstreamDevice::free(Segment segment) {
  const auto it = blocks_.find(segment.addr);
  if (it == blocks_.end()) throw Error("upstream: free of a segment it never handed out");
  const Block block = it->second;
  blocks_.erase(it);
  upstream_.deallocate(block, device_.elapsed());
}

LayeredPolicy::LayeredPolicy(std::unique_ptr<Policy> upstream, Device& device, const MakeTopPolicy& make_top)
    : upstream_(std::move(upstream)), device_(*upstream_, device), top_(make_top(device_)) {}

PolicyStats LayeredPolicy::stats() const {
  const PolicyStats top = top_->stats();
  const PolicyStats upstream = upstream_->stats();
  return PolicyStats{.allocated = top.allocated,
                     .reserved = upstream.reserved,
                     .largest_free = std::max(top.largest_free, upstream.largest_free),
                     .limit = top.limit != 0 ? top.limit : upstream.limit};
}

PolicyInspection LayeredPolicy::inspect(Detail detail) const {
  PolicyInspection inspection = top_->inspect(detail);
  PolicyInspection upstream = upstream_->inspect(detail);
  inspection.releasable += upstream.releasable;
  for (PolicyStat& stat : upstream.extra) {
    stat.name = "upstream_" + stat.name;
    inspection.extra.push_back(std::move(stat));
  }
  if (detail == Detail::full && !upstream.state.empty()) inspection.state += "\n  upstream: " + upstream.state;
  return inspection;
}

void LayeredPolicy::release_cached() {
  top_->release_cached();
  upstream_->release_cached();
}

void LayeredPolicy::synchronize(const Sync& sync, Nanos now) {
  top_->synchronize(sync, now);
  upstream_->synchronize(sync, now);
}

void LayeredPolicy::check() const {
  top_->check();
  upstream_->check();
}

namespace {

std::string_view unbracketed(std::string_view spec) {
  if (spec.size() >= 2 && spec.front() == '[' && spec.back() == ']') return spec.substr(1, spec.size() - 2);
  return spec;
}

bool names_the_device(std::string_view spec) { return spec.empty() || spec == "cuda"; }

}  // namespace

MakePolicy read_upstream(std::string_view spec) {
  spec = unbracketed(spec);
  return names_the_device(spec) ? MakePolicy() : parse_policy_spec(spec).make;
}

}  // namespace allocsim
