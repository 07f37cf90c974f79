// Every number a run reports, defined once: name (CSV column and JSON key), unit, help,
// and how to read it from a result. The CSV header, the JSON objects and the terminal
// table are all drawn from this one table; derived figures are computed, never stored.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <variant>

#include "sim/result.hpp"

namespace allocsim {

// Empty (monostate) where a value does not apply, such as first_oom_event without an OOM.
using MetricValue = std::variant<std::monostate, std::string, std::uint64_t, double>;

struct Metric {
  std::string_view name;
  Unit unit;
  std::string_view help;
  MetricValue (*get)(const RunResult& run, const TenantResult& tenant);
  bool in_table = true;  // false: CSV and JSON only, the terminal says it another way
};

std::span<const Metric> metrics();
// The metric named `name`: the caller's own spelling of a declared name, so none is a mistake in
// the code (logic_error).
const Metric& find_metric(std::string_view name);

// Wall-clock figures (seconds and rates: replay_seconds, events_per_second) differ between
// runs of the same inputs; outputs that must be reproducible (sweeps) leave them out.
inline bool is_wall_clock(const Metric& metric) { return metric.unit == Unit::seconds || metric.unit == Unit::rate; }

// Plain text for CSV: integers as digits, reals in shortest round-trip form, empty for none.
std::string format_plain(const MetricValue& value);
// For people: sizes in binary units, ratios in percent, times with their unit.
std::string format_human(const MetricValue& value, Unit unit);

}  // namespace allocsim
