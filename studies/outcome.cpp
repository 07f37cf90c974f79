#include "studies/outcome.hpp"

#include "sim/report.hpp"

namespace allocsim {

bool ran_through(const TenantResult& tenant) {
  return tenant.oom_count == 0 && !tenant.hang_event && tenant.events_replayed == tenant.events;
}

std::string failure_kind(const TenantResult& tenant) {
  if (const OomRecord* oom = tenant.first_oom()) return std::string(name_of(oom->kind));
  if (tenant.hang_event) return "the allocator would hang";
  return "";
}

std::string why_not(const TenantResult& tenant) {
  if (const OomRecord* oom = tenant.first_oom()) return describe_oom(*oom);
  if (tenant.hang_event) {
    return "HANG at event " + std::to_string(*tenant.hang_event) + " of tenant " + std::to_string(tenant.index) + ": " +
           tenant.hang_reason;
  }
  return "";
}

}  // namespace allocsim
