#include "real_gpu/validation.hpp"

#include <cmath>
#include <iomanip>
#include <ostream>
#include <sstream>

#include "policies/registry.hpp"
#include "sim/error.hpp"
#include "sim/report.hpp"

namespace allocsim {
namespace {

Scenario scenario_for(std::shared_ptr<const Trace> trace, const ValidationOptions& options, const PolicySpec& policy,
                      DeviceSpec device) {
  Scenario scenario;
  scenario.device = std::move(device);
  scenario.on_oom = options.on_oom;
  scenario.tenants.push_back(TenantSpec{std::move(trace), policy.maker(), 0});
  return scenario;
}

double as_double(std::uint64_t value) { return static_cast<double>(value); }

std::optional<double> mean(std::span<const DeviceCall> calls, DeviceOp op, const auto& cost_of) {
  double total = 0;
  std::size_t count = 0;
  for (const DeviceCall& call : calls) {
    if (call.op != op) continue;
    total += as_double(cost_of(call));
    ++count;
  }
  if (count == 0) return std::nullopt;
  return total / as_double(count);
}

Nanos simulated_ns(const CostModel& cost, const DeviceCall& call) {
  switch (call.op) {
    case DeviceOp::malloc:
    case DeviceOp::failed_malloc:
      return cost.malloc_cost(call.bytes);
    case DeviceOp::free:
      return cost.free_cost(call.bytes);
    case DeviceOp::copy:
      return cost.copy_cost(call.bytes);
    case DeviceOp::map:
      return cost.map_cost(call.bytes);
    case DeviceOp::unmap:
      return cost.unmap_cost(call.bytes);
  }
  return 0;
}

std::string plain(const std::optional<double>& value) {
  if (!value) return "";
  std::ostringstream text;
  if (*value == std::floor(*value) && std::abs(*value) < 1e18) {
    text << static_cast<long long>(*value);
  } else {
    text << std::setprecision(6) << *value;
  }
  return text.str();
}

std::string difference(const MetricComparison& row) {
  if (!row.simulated || !row.measured) return "";
  if (row.target == Target::ratio) {
    if (*row.simulated == 0) return "";
    std::ostringstream text;
    text << "x" << std::setprecision(3) << *row.measured / *row.simulated;
    return text.str();
  }
  return plain(*row.measured - *row.simulated);
}

std::string verdict(const MetricComparison& row) {
  if (row.target == Target::ratio) return "cost";
  return row.agrees() ? "yes" : "NO";
}

}  // namespace

Validation validate(DeviceApi& api, std::shared_ptr<const Trace> trace, const ValidationOptions& options) {
  if (!trace) throw Error("validation needs a trace");
  if (!options.policy.make) throw Error("validation needs a policy");
  CudaDevice device(api, options.device);
  Validation validation;
  validation.workload = trace->info.name;
  validation.policy = options.policy.text;
  validation.backend = api.backend();
  validation.device = device.mirror(options.cost);
  validation.ballast = device.ballast();
  validation.capped = options.device.cap != 0;
  validation.page_mapped = options.device.source == SegmentSource::vmm || options.policy.segments.page_mapped;
  validation.places_by_address = options.policy.segments.places_by_address;
  const Scenario scenario = scenario_for(trace, options, options.policy, validation.device);
  validation.simulated = run(scenario);
  validation.measured = run_on(device, scenario);
  validation.calls = device.calls();
  return validation;
}

bool MetricComparison::agrees() const {
  if (target == Target::ratio) return true;
  return simulated == measured;
}

std::vector<MetricComparison> compare(const Validation& validation) {
  const TenantResult& sim = validation.simulated.tenants.at(0);
  const TenantResult& real = validation.measured.tenants.at(0);
  const Bytes context = validation.device.context_overhead;
  // What can differ at all on this run. Uncapped, the same trace through the same policy asks
  // for the same segments in simulation and on the device, unless where a segment lies can
  // change the policy's choices (placement by address) or the real driver sizes the pages.
  const bool capped = validation.capped;
  const bool segments_can_differ =
      capped || validation.page_mapped || validation.places_by_address;
  std::vector<MetricComparison> rows;
  const auto exact = [&rows](const char* metric, std::optional<double> simulated, std::optional<double> measured,
                             bool could_differ) {
    rows.push_back({metric, Target::exact, simulated, measured, could_differ || simulated != measured});
  };
  exact("events_replayed", as_double(sim.events_replayed), as_double(real.events_replayed), capped);
  exact("peak_allocated_bytes", as_double(sim.peak_allocated), as_double(real.peak_allocated), capped);
  exact("peak_reserved_bytes", as_double(sim.peak_reserved), as_double(real.peak_reserved), segments_can_differ);
  // cudaMemGetInfo after every device malloc, less what was in use before the replay: the
  // driver's own count, which the simulation cannot read.
  exact("device_used_peak_bytes", as_double(validation.simulated.peak_device - context),
        as_double(validation.measured.peak_device - context), true);
  exact("device_mallocs", as_double(sim.device_mallocs), as_double(real.device_mallocs), segments_can_differ);
  exact("device_frees", as_double(sim.device_frees), as_double(real.device_frees), segments_can_differ);
  // Uncapped on a large card, "no OOM" on both sides is no test of the OOM model.
  exact("device_failed_mallocs", as_double(sim.device_failed_mallocs), as_double(real.device_failed_mallocs),
        capped);
  exact("oom_count", as_double(sim.oom_count), as_double(real.oom_count), capped);
  const auto oom_field = [](const TenantResult& result, auto field) -> std::optional<double> {
    if (const OomRecord* oom = result.first_oom()) return field(*oom);
    return std::nullopt;
  };
  const auto event = [](const OomRecord& oom) { return as_double(oom.event); };
  const auto bytes = [](const OomRecord& oom) { return as_double(oom.bytes); };
  const auto kind = [](const OomRecord& oom) { return static_cast<double>(oom.kind); };
  // Both absent is oom_count's agreement already; an OOM on either side is a real comparison.
  const bool some_oom = sim.first_oom() != nullptr || real.first_oom() != nullptr;
  exact("first_oom_event", oom_field(sim, event), oom_field(real, event), some_oom);
  exact("first_oom_bytes", oom_field(sim, bytes), oom_field(real, bytes), some_oom);
  exact("first_oom_kind", oom_field(sim, kind), oom_field(real, kind), some_oom);

  // Costs: the cost model applied to the very calls the device saw, against their times.
  const CostModel& cost = validation.device.cost;
  const std::span<const DeviceCall> calls = validation.calls;
  const auto model = [&cost](const DeviceCall& call) { return simulated_ns(cost, call); };
  const auto clock = [](const DeviceCall& call) { return call.ns; };
  for (const auto& [metric, op] : {std::pair{"malloc_ns_mean", DeviceOp::malloc}, {"free_ns_mean", DeviceOp::free},
                                   {"failed_malloc_ns_mean", DeviceOp::failed_malloc}, {"copy_ns_mean", DeviceOp::copy},
                                   {"map_ns_mean", DeviceOp::map}, {"unmap_ns_mean", DeviceOp::unmap}}) {
    if (auto measured = mean(calls, op, clock)) rows.push_back({metric, Target::ratio, mean(calls, op, model), measured});
  }
  const auto per_call = [](const TenantResult& result) -> std::optional<double> {
    const std::uint64_t calls = result.device_mallocs + result.device_frees + result.device_failed_mallocs;
    if (calls == 0) return std::nullopt;
    return as_double(result.allocator_time) / as_double(calls);
  };
  rows.push_back({"allocator_ns_per_device_call", Target::ratio, per_call(sim), per_call(real)});
  return rows;
}

void write_comparison_table(std::ostream& out, const Validation& validation, std::span<const MetricComparison> rows) {
  out << validation.workload << " under " << validation.policy << " on " << validation.device.name << " ("
      << validation.backend << "): capacity " << format_bytes(validation.device.capacity) << ", in use before "
      << format_bytes(validation.device.context_overhead);
  if (validation.ballast != 0) out << ", ballast " << format_bytes(validation.ballast);
  out << '\n';
  std::size_t width = 6;
  for (const MetricComparison& row : rows) width = std::max(width, row.metric.size());
  out << std::left << std::setw(static_cast<int>(width)) << "metric" << std::right << std::setw(18) << "simulated"
      << std::setw(18) << "measured" << std::setw(14) << "difference" << "  agrees\n";
  std::size_t agreeing = 0;
  std::size_t exact = 0;
  std::size_t by_construction = 0;
  for (const MetricComparison& row : rows) {
    out << std::left << std::setw(static_cast<int>(width)) << row.metric << std::right << std::setw(18)
        << (row.simulated ? plain(row.simulated) : "-") << std::setw(18) << (row.measured ? plain(row.measured) : "-")
        << std::setw(14) << difference(row) << "  " << verdict(row) << (row.informative ? "" : " (by construction)")
        << '\n';
    if (row.target != Target::exact) continue;
    if (!row.informative) {
      ++by_construction;
      continue;
    }
    ++exact;
    agreeing += row.agrees() ? 1 : 0;
  }
  out << agreeing << " of " << exact << " informative exact metrics agree; " << by_construction
      << " more are equal by construction on this run (uncapped, placement independent of addresses)\n";
}

void write_comparison_csv(std::ostream& out, const Validation& validation, std::span<const MetricComparison> rows) {
  out << "workload,policy,backend,device,capacity_bytes,metric,target,simulated,measured,difference,agrees,"
         "informative\n";
  for (const MetricComparison& row : rows) {
    out << csv_field(validation.workload) << ',' << csv_field(validation.policy) << ',' << validation.backend << ','
        << csv_field(validation.device.name) << ',' << validation.device.capacity << ',' << row.metric << ','
        << (row.target == Target::exact ? "exact" : "ratio") << ',' << plain(row.simulated) << ','
        << plain(row.measured) << ',' << difference(row) << ',' << verdict(row) << ','
        << (row.target == Target::ratio ? "" : row.informative ? "yes" : "no") << '\n';
  }
}

void write_calls_csv(std::ostream& out, const Validation& validation) {
  out << "index,op,bytes,measured_ns,simulated_ns\n";
  for (std::size_t i = 0; i < validation.calls.size(); ++i) {
    const DeviceCall& call = validation.calls[i];
    out << i << ',' << name_of(call.op) << ',' << call.bytes << ',' << call.ns << ','
        << simulated_ns(validation.device.cost, call) << '\n';
  }
}

}  // namespace allocsim
