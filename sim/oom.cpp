#include "sim/oom.hpp"

#include <algorithm>
#include <array>

namespace allocsim {

std::string_view name_of(OomKind kind) {
  static constexpr std::array<std::string_view, kOomKindCount> kNames{"capacity", "fragmentation", "reservation"};
  return kNames[static_cast<std::size_t>(kind)];
}

Bytes TenantShare::others_reserved() const {
  Bytes bytes = 0;
  for (const TenantHolding& other : others) bytes += other.reserved;
  return bytes;
}

Bytes TenantShare::others_live() const {
  Bytes bytes = 0;
  for (const TenantHolding& other : others) bytes += other.live;
  return bytes;
}

namespace {
Bytes less(Bytes from, Bytes taken) { return from > taken ? from - taken : 0; }
}  // namespace

Bytes TenantShare::gives() const { return less(capacity, before_start + contexts + others_reserved()); }

Bytes TenantShare::could_give() const { return less(capacity, before_start + contexts + others_live()); }

Bytes oom_headroom(const OomContext& context) {
  // The policy's own limit caps what the device's free bytes can do for it.
  const Bytes limit = context.policy.limit;
  const Bytes reserved = context.policy.reserved;
  if (limit == 0) return context.device_available;
  return std::min(context.device_available, limit > reserved ? limit - reserved : 0);
}

OomKind classify_oom(const OomContext& context) {
  if (context.live_requested + context.request > context.usable) return OomKind::capacity;
  const Bytes limit = context.policy.limit;
  if (limit != 0 && context.own_live_requested + context.request > limit) return OomKind::capacity;
  const Bytes reserved = context.policy.reserved;
  const Bytes headroom = oom_headroom(context);
  if (headroom + context.releasable >= context.request) return OomKind::reservation;
  const Bytes own_free = reserved - context.policy.allocated;
  if (headroom + own_free >= context.request) return OomKind::fragmentation;
  return OomKind::reservation;
}

OomKind classify_over_run(const OomContext& context) {
  const OomKind request_kind = classify_oom(context);
  const Bytes needs = std::max(context.needs, context.own_live_requested + context.request);
  if (needs > context.share.could_give()) return OomKind::capacity;
  // Other tenants hold memory this one needs: the first placement that failed is detail.
  if (needs > context.share.gives()) return OomKind::reservation;
  // The policy's own limit holds it back: no placement under that limit fits the run.
  if (context.policy.limit != 0 && needs > context.policy.limit) return OomKind::reservation;
  if (request_kind == OomKind::capacity) return OomKind::reservation;  // the policy's own limit, not the device
  return request_kind;
}

}  // namespace allocsim
