#include "sim/result.hpp"

namespace allocsim {
namespace {

double one_minus_ratio(Bytes part, Bytes whole) {
  return whole == 0 ? 0.0 : 1.0 - static_cast<double>(part) / static_cast<double>(whole);
}

}  // namespace

double TenantResult::fragmentation_at_peak() const { return one_minus_ratio(peak_allocated, reserved_at_peak); }

double TenantResult::external_fragmentation_at_peak() const {
  return one_minus_ratio(largest_free_at_peak, reserved_at_peak - peak_allocated);
}

Bytes TenantResult::rounding_waste_at_peak() const {
  const Bytes requested = at_peak.total();
  return peak_allocated > requested ? peak_allocated - requested : 0;
}

double TenantResult::fragmentation_of_touched_at_peak() const {
  return one_minus_ratio(peak_allocated, reserved_at_peak - never_touched_at_peak);
}

double TenantResult::overhead_vs_lower_bound() const {
  if (live_lower_bound == 0) return 0.0;
  return static_cast<double>(peak_reserved) / static_cast<double>(live_lower_bound) - 1.0;
}

double RunResult::events_per_second() const {
  return replay_seconds > 0 ? static_cast<double>(events_replayed) / replay_seconds : 0.0;
}

}  // namespace allocsim
