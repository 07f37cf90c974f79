#include "sim/metrics.hpp"

#include <array>
#include <cstdio>
#include <stdexcept>

#include "sim/float_chars.hpp"
#include "sim/verdict.hpp"

namespace allocsim {
namespace {

using R = const RunResult&;
using T = const TenantResult&;

MetricValue oom_kind_count(T t, OomKind kind) { return t.ooms_by_request_kind[static_cast<std::size_t>(kind)]; }

template <Tag tag>
MetricValue peak_tag_bytes(R, T t) {
  return t.at_peak.by_tag[static_cast<std::size_t>(tag)];
}

const std::array kMetrics{
    Metric{"workload", Unit::text, "the workload spec or trace file", [](R, T t) -> MetricValue { return t.workload; }},
    Metric{"policy", Unit::text, "the policy spec", [](R, T t) -> MetricValue { return t.policy; }},
    Metric{"device", Unit::text, "the device preset or 'sim'", [](R r, T) -> MetricValue { return r.device.name; }, false},
    Metric{"capacity_bytes", Unit::bytes, "device memory in total, context included",
           [](R r, T) -> MetricValue { return r.device.capacity; }, false},
    Metric{"events", Unit::count, "requests in the trace", [](R, T t) -> MetricValue { return std::uint64_t{t.events}; }},
    Metric{"peak_requested_bytes", Unit::bytes, "most bytes the program had asked for and not freed",
           [](R, T t) -> MetricValue { return t.peak_requested; }},
    Metric{"peak_allocated_bytes", Unit::bytes, "most bytes in live blocks, after the policy's rounding",
           [](R, T t) -> MetricValue { return t.peak_allocated; }},
    Metric{"peak_reserved_bytes", Unit::bytes, "most bytes the policy held from the device",
           [](R, T t) -> MetricValue { return t.peak_reserved; }},
    Metric{"live_lower_bound_bytes", Unit::bytes, "peak of live requested bytes over the whole trace: no policy needs less",
           [](R, T t) -> MetricValue { return t.live_lower_bound; }},
    Metric{"overhead_vs_lower_bound", Unit::ratio, "peak reserved / live lower bound - 1; empty when any request failed",
           [](R, T t) -> MetricValue {
             // The peak of a prefix, or of a run that skipped requests, says nothing against the whole.
             if (t.oom_count > 0 || t.events_replayed < t.events) return {};
             return t.overhead_vs_lower_bound();
           }},
    Metric{"fragmentation_at_peak", Unit::ratio, "1 - allocated / reserved when allocated bytes peaked",
           [](R, T t) -> MetricValue { return t.fragmentation_at_peak(); }},
    Metric{"external_fragmentation_at_peak", Unit::ratio, "1 - largest free block / free bytes in the pool, at that moment",
           [](R, T t) -> MetricValue { return t.external_fragmentation_at_peak(); }},
    Metric{"device_mallocs", Unit::count, "successful device allocations (cudaMalloc)",
           [](R, T t) -> MetricValue { return t.device_mallocs; }},
    Metric{"device_frees", Unit::count, "device frees (cudaFree)", [](R, T t) -> MetricValue { return t.device_frees; }},
    Metric{"allocator_time_ns", Unit::nanos, "simulated time spent in device calls",
           [](R, T t) -> MetricValue { return t.allocator_time; }},
    Metric{"bytes_moved", Unit::bytes, "bytes copied to compact memory", [](R, T t) -> MetricValue { return t.bytes_moved; }},
    Metric{"oom_count", Unit::count, "requests the policy could not serve", [](R, T t) -> MetricValue { return t.oom_count; }},
    Metric{"first_oom_event", Unit::count, "index in the trace of the first OOM",
           [](R, T t) -> MetricValue {
             if (!t.first_oom()) return {};
             return std::uint64_t{t.first_oom()->event};
           }},
    Metric{"first_oom_bytes", Unit::bytes, "bytes the first OOM asked for",
           [](R, T t) -> MetricValue {
             if (!t.first_oom()) return {};
             return t.first_oom()->bytes;
           }},
    Metric{"first_oom_kind", Unit::text, "the run verdict at the first OOM: capacity, fragmentation or reservation",
           [](R, T t) -> MetricValue {
             if (!t.first_oom()) return {};
             return std::string(name_of(t.first_oom()->kind));
           }},
    Metric{"replay_seconds", Unit::seconds, "wall time of the whole replay", [](R r, T) -> MetricValue { return r.replay_seconds; }},
    Metric{"events_per_second", Unit::rate, "events of all tenants replayed per wall second",
           [](R r, T) -> MetricValue { return r.events_per_second(); }},
    // Columns beyond the shared set: appended, never reordered.
    Metric{"tenant", Unit::count, "index of the tenant in the scenario",
           [](R, T t) -> MetricValue { return std::uint64_t{t.index}; }, false},
    Metric{"events_replayed", Unit::count, "events replayed before the end or an OOM stop",
           [](R, T t) -> MetricValue { return std::uint64_t{t.events_replayed}; }, false},
    Metric{"peak_device_bytes", Unit::bytes, "most device memory in use by everyone, context included",
           [](R r, T) -> MetricValue { return r.peak_device; }},
    Metric{"reserved_at_peak_bytes", Unit::bytes, "reserved bytes when allocated bytes peaked",
           [](R, T t) -> MetricValue { return t.reserved_at_peak; }, false},
    Metric{"device_failed_mallocs", Unit::count, "device allocations refused for lack of memory",
           [](R, T t) -> MetricValue { return t.device_failed_mallocs; }, false},
    Metric{"ooms_capacity", Unit::count, "OOMs that were capacity at the request: live bytes exceeded the device or the policy's limit",
           [](R, T t) -> MetricValue { return oom_kind_count(t, OomKind::capacity); }, false},
    Metric{"ooms_fragmentation", Unit::count, "OOMs that were fragmentation at the request: enough free bytes, no block large enough",
           [](R, T t) -> MetricValue { return oom_kind_count(t, OomKind::fragmentation); }, false},
    Metric{"ooms_reservation", Unit::count, "OOMs that were reservation at the request: the bytes held by a cache or another tenant",
           [](R, T t) -> MetricValue { return oom_kind_count(t, OomKind::reservation); }, false},
    Metric{"allocator_hang_event", Unit::count, "the request at which the real allocator would loop forever",
           [](R, T t) -> MetricValue {
             if (!t.hang_event) return {};
             return std::uint64_t{*t.hang_event};
           }, false},
    Metric{"allocator_hang_reason", Unit::text, "why it would loop", [](R, T t) -> MetricValue { return t.hang_reason; },
           false},
    Metric{"peak_weight_bytes", Unit::bytes, "requested bytes alive at the peak, tagged weight",
           peak_tag_bytes<Tag::weight>, false},
    Metric{"peak_activation_bytes", Unit::bytes, "... tagged activation", peak_tag_bytes<Tag::activation>, false},
    Metric{"peak_gradient_bytes", Unit::bytes, "... tagged gradient", peak_tag_bytes<Tag::gradient>, false},
    Metric{"peak_optimizer_bytes", Unit::bytes, "... tagged optimizer", peak_tag_bytes<Tag::optimizer>, false},
    Metric{"peak_workspace_bytes", Unit::bytes, "... tagged workspace", peak_tag_bytes<Tag::workspace>, false},
    Metric{"peak_input_bytes", Unit::bytes, "... tagged input", peak_tag_bytes<Tag::input>, false},
    Metric{"peak_temp_bytes", Unit::bytes, "... tagged temp", peak_tag_bytes<Tag::temp>, false},
    Metric{"peak_other_bytes", Unit::bytes, "... tagged other", peak_tag_bytes<Tag::other>, false},
    Metric{"end_time_ns", Unit::nanos, "simulated time of the tenant's last event, allocator delays included",
           [](R, T t) -> MetricValue { return t.end_time; }},
    Metric{"peak_runtime_bytes", Unit::bytes, "... tagged runtime (the framework's own: cuBLAS workspaces, DDP buckets)",
           peak_tag_bytes<Tag::runtime>, false},
    Metric{"peak_step", Unit::count, "the training step (1 = the warm-up) in which allocated bytes peaked; empty "
           "for a trace without steps",
           [](R, T t) -> MetricValue {
             if (!t.peak_step) return {};
             return std::uint64_t{*t.peak_step};
           }},
    Metric{"trace_steps", Unit::count, "training steps in the trace (the sweep's steps column is the point's); empty without steps",
           [](R, T t) -> MetricValue {
             if (t.steps == 0) return {};
             return std::uint64_t{t.steps};
           }, false},
    Metric{"first_oom_step", Unit::count, "the step of the first OOM",
           [](R, T t) -> MetricValue {
             if (!t.first_oom() || !t.first_oom()->step) return {};
             return std::uint64_t{*t.first_oom()->step};
           }, false},
    Metric{"verdict", Unit::text, "fits, or why not over the whole run: capacity, fragmentation, reservation, hang",
           [](R r, T t) -> MetricValue { return std::string(verdict_word(verdict_of(r, t))); }, false},
    Metric{"needs_at_least_bytes", Unit::bytes, "live bytes the trace needs, with the policy's rounding when a request failed",
           [](R r, T t) -> MetricValue { return verdict_of(r, t).needs; }, false},
    Metric{"device_gives_bytes", Unit::bytes, "what the device gives this process: at the first OOM, else alone on it",
           [](R r, T t) -> MetricValue { return verdict_of(r, t).gives; }, false},
    Metric{"held_by", Unit::text, "at the first OOM, what held the rest: KIND[N]=BYTES;... (tenant, own_cache, "
                                  "system_reserve, memory_limit, fraction, contexts)",
           [](R r, T t) -> MetricValue {
             std::string out;
             for (const Holder& holder : verdict_of(r, t).holders) {
               if (!out.empty()) out += ';';
               out += name_of(holder.kind);
               if (holder.kind == HolderKind::other_tenant) out += std::to_string(holder.tenant);
               out += '=';
               out += std::to_string(holder.bytes);
             }
             return out;
           }, false},
    Metric{"first_oom_request_kind", Unit::text, "the first OOM's kind at the request, judged at it alone (first_oom_kind is the run verdict)",
           [](R, T t) -> MetricValue {
             if (!t.first_oom()) return {};
             return std::string(name_of(t.first_oom()->request_kind));
           }, false},
    Metric{"reserved_unused_bytes", Unit::bytes, "at the allocated peak, reserved bytes in no live block",
           [](R, T t) -> MetricValue { return t.reserved_unused_at_peak(); }},
    Metric{"rounding_waste_bytes", Unit::bytes, "at the allocated peak, what the policy's rounding added to live requests",
           [](R, T t) -> MetricValue { return t.rounding_waste_at_peak(); }},
    Metric{"cached_free_bytes", Unit::bytes, "of reserved_unused_bytes: free memory blocks had used before",
           [](R, T t) -> MetricValue { return t.cached_free_at_peak(); }},
    Metric{"never_touched_bytes", Unit::bytes, "of reserved_unused_bytes: memory no block had used yet (a preallocated pool)",
           [](R, T t) -> MetricValue { return t.never_touched_at_peak; }},
    Metric{"fragmentation_of_touched", Unit::ratio, "1 - allocated / (reserved - never touched) at the allocated peak",
           [](R, T t) -> MetricValue { return t.fragmentation_of_touched_at_peak(); }},
};

std::string fixed(const char* format, double value, const char* suffix) {
  char buffer[48];
  std::snprintf(buffer, sizeof buffer, format, value, suffix);
  return buffer;
}

}  // namespace

std::span<const Metric> metrics() { return kMetrics; }

const Metric& find_metric(std::string_view name) {
  for (const Metric& metric : kMetrics) {
    if (metric.name == name) return metric;
  }
  throw std::logic_error("no metric " + std::string(name));
}

std::string format_plain(const MetricValue& value) {
  if (const auto* text = std::get_if<std::string>(&value)) return *text;
  if (const auto* integer = std::get_if<std::uint64_t>(&value)) return std::to_string(*integer);
  if (const auto* real = std::get_if<double>(&value)) {
    return double_to_shortest(*real);
  }
  return {};
}

std::string format_human(const MetricValue& value, Unit unit) {
  if (std::holds_alternative<std::monostate>(value)) return "-";
  if (const auto* integer = std::get_if<std::uint64_t>(&value)) {
    if (unit == Unit::bytes) return format_bytes(*integer);
    if (unit == Unit::nanos) return format_nanos(*integer);
  }
  if (const auto* real = std::get_if<double>(&value)) {
    if (unit == Unit::ratio) return fixed("%.2f%s", *real * 100, " %");
    if (unit == Unit::seconds) return fixed("%.3f%s", *real, " s");
    if (unit == Unit::rate) return fixed("%.2f%s", *real / 1e6, " M/s");
  }
  return format_plain(value);
}

}  // namespace allocsim
