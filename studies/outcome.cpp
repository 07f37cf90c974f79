#include "studies/outcome.hpp"

#include "sim/verdict.hpp"

namespace allocsim {

bool ran_through(const TenantResult& tenant) {
  return tenant.oom_count == 0 && !tenant.hang_event && tenant.events_replayed == tenant.events;
}

std::string failure_kind(const TenantResult& tenant) {
  if (const OomRecord* oom = tenant.first_oom()) return std::string(name_of(oom->kind));
  if (tenant.hang_event) return "the allocator would hang";
  return "";
}

std::string why_not(const RunResult& run, const TenantResult& tenant) {
  if (ran_through(tenant)) return "";
  // The verdict's headline: the whole run judged, the holders named; its detail lines stay
  // in `allocsim run`'s table.
  const std::string text = describe_verdict(verdict_of(run, tenant), run.device.name);
  return text.substr(0, text.find('\n'));
}

}  // namespace allocsim
