// What a run produced, per tenant. The metric table (metrics.hpp) names and formats it.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "sim/breakdown.hpp"
#include "sim/oom.hpp"
#include "sim/sim_device.hpp"

namespace allocsim {

struct OomRecord {
  std::size_t tenant;
  std::size_t event;  // index in the tenant's trace
  std::optional<std::size_t> step;  // the training step it happened in, for a trace with steps
  Nanos time;
  Bytes bytes;        // requested
  OomKind kind;          // judged over the whole run (classify_over_run)
  OomKind request_kind;  // judged at this request alone (classify_oom)
  bool at_start;         // the process could not create its CUDA context: `bytes` is the context
  OomContext context;
  std::string policy_state;  // the policy's own account, for the first OOM of a tenant only
};

struct TenantResult {
  std::size_t index = 0;  // in the scenario
  std::string workload;
  std::string policy;
  std::size_t events = 0;           // in the trace
  std::size_t events_replayed = 0;  // fewer when an OOM stopped the tenant
  Bytes live_lower_bound = 0;
  Bytes needs = 0;            // the lower bound with the policy's rounding; computed at the first OOM, else 0
  Bytes planned_reserve = 0;  // an offline planner's reserve for the whole trace, at the first OOM
  Bytes context = 0;          // this tenant's CUDA context, charged when it started
  Bytes peak_requested = 0;
  Bytes peak_allocated = 0;
  Bytes peak_reserved = 0;
  // The moment allocated bytes peaked: how much of what the policy held was wasted.
  std::size_t peak_event = 0;
  Bytes reserved_at_peak = 0;
  Bytes largest_free_at_peak = 0;
  Bytes never_touched_at_peak = 0;  // of reserved_at_peak: bytes no block had covered yet
  Breakdown at_peak;  // what was alive then, by tag and layer
  std::optional<std::size_t> peak_step;  // the training step of peak_event (1 = warm-up)
  std::size_t steps = 0;                 // training steps in the trace, 0 without steps
  bool generation = false;               // the steps are a generation's (TraceInfo::generation)
  std::uint64_t device_mallocs = 0;
  std::uint64_t device_frees = 0;
  std::uint64_t device_failed_mallocs = 0;
  Nanos allocator_time = 0;
  Bytes bytes_moved = 0;
  Nanos end_time = 0;  // simulated time of the tenant's last replayed event
  std::uint64_t oom_count = 0;
  std::uint64_t ooms_by_request_kind[kOomKindCount] = {};  // every OOM counted by its kind at the request
  std::vector<OomRecord> ooms;  // the first kMaxOomRecords, in order
  std::vector<PolicyStat> extra;  // the policy's own statistics at the end
  std::optional<std::size_t> hang_event;  // where the real allocator would have looped forever
  std::string hang_reason;

  double fragmentation_at_peak() const;
  double external_fragmentation_at_peak() const;
  double overhead_vs_lower_bound() const;
  // The moment allocated bytes peaked, split: what the policy's rounding added to the
  // requested bytes, and the free part of its reserve, cached (touched before) or never touched.
  Bytes rounding_waste_at_peak() const;
  Bytes reserved_unused_at_peak() const { return reserved_at_peak - peak_allocated; }
  Bytes cached_free_at_peak() const { return reserved_unused_at_peak() - never_touched_at_peak; }
  // 1 - allocated / (reserved less never touched): fragmentation of the memory the policy used.
  double fragmentation_of_touched_at_peak() const;
  const OomRecord* first_oom() const { return ooms.empty() ? nullptr : &ooms.front(); }
};

constexpr std::size_t kMaxOomRecords = 1000;

struct RunResult {
  DeviceSpec device;
  Bytes before_start = 0;     // device bytes gone before any tenant started (a real GPU's own context)
  Bytes peak_device = 0;      // device bytes in use at the worst moment, context included
  double replay_seconds = 0;  // wall time of the whole replay
  std::size_t events_replayed = 0;
  std::vector<TenantResult> tenants;

  double events_per_second() const;
};

}  // namespace allocsim
