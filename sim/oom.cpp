#include "sim/oom.hpp"

#include <array>

namespace allocsim {

std::string_view name_of(OomKind kind) {
  static constexpr std::array<std::string_view, kOomKindCount> kNames{"capacity", "fragmentation", "reservation"};
  return kNames[static_cast<std::size_t>(kind)];
}

OomKind classify_oom(const OomContext& context) {
  if (context.live_requested + context.request > context.usable) return OomKind::capacity;
  const Bytes limit = context.policy.limit;
  if (limit != 0 && context.own_live_requested + context.request > limit) return OomKind::capacity;
  if (context.device_available + context.policy.releasable >= context.request) return OomKind::reservation;
  const Bytes own_free = context.policy.reserved - context.policy.allocated;
  if (context.device_available + own_free >= context.request) return OomKind::fragmentation;
  return OomKind::reservation;
}

}  // namespace allocsim
