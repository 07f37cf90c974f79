#include "policies/limiting.hpp"

#include <bit>

#include "policies/common/upstream.hpp"
#include "policies/registry.hpp"
#include "sim/error.hpp"

namespace allocsim {

LimitingPolicy::LimitingPolicy(const Params& params, Device& device)
    : upstream_(make_upstream(params.text("upstream"), device)),
      limit_(params.bytes("limit")),
      alignment_(params.bytes("alignment")) {
  if (!upstream_) upstream_ = make_policy("direct", device);  // cuda_memory_resource
}

void LimitingPolicy::check_params(const Params& params) {
  check_upstream(params.text("upstream"));
  params.bytes("limit");
  const Bytes alignment = params.bytes("alignment");
  if (alignment == 0 || !std::has_single_bit(alignment)) {
    throw Error("policy limiting: alignment must be a power of two, not " + format_bytes_exact(alignment));
  }
}

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
