#include "policies/limiting.hpp"

#include <bit>
#include <utility>

#include "policies/common/upstream.hpp"
#include "policies/registry.hpp"
#include "sim/error.hpp"

namespace allocsim {

LimitingPolicy::Settings LimitingPolicy::settings(const Params& params) {
  Settings settings{
      .upstream = read_upstream(params.text("upstream")),
      .limit = params.bytes("limit"),
      .alignment = params.bytes("alignment"),
  };
  if (!settings.upstream) settings.upstream = parse_policy_spec("direct").make;  // cuda_memory_resource
  if (settings.alignment == 0 || !std::has_single_bit(settings.alignment)) {
    throw Error("policy limiting: alignment must be a power of two, not " + format_bytes_exact(settings.alignment));
  }
  return settings;
}

LimitingPolicy::LimitingPolicy(const Settings& settings, Device& device)
    : upstream_(std::move(settings.upstream(device).policy)), limit_(settings.limit), alignment_(settings.alignment) {}

Allocation LimitingPolicy::allocate(const Request& request) {
  const Bytes proposed = align_up(request.bytes, alignment_);
  if (limit_ != 0 && counted_ + proposed > limit_) return std::nullopt;
  Allocation got = upstream_->allocate(request);
  if (got) counted_ += proposed;
  return got;
}

void LimitingPolicy::deallocate(const Block& block, Nanos now) {
  upstream_->deallocate(block, now);
  counted_ -= align_up(block.requested, alignment_);
}

PolicyStats LimitingPolicy::stats() const {
  PolicyStats stats = upstream_->stats();
  if (limit_ != 0) stats.limit = limit_;
  return stats;
}

}  // namespace allocsim
