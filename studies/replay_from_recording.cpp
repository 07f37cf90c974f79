#include "studies/replay_from_recording.hpp"

#include <algorithm>
#include <array>
#include <memory>
#include <stdexcept>

#include "policies/caching.hpp"
#include "policies/registry.hpp"
#include "policies/torch_alloc_conf.hpp"
#include "sim/atomic_file.hpp"
#include "sim/csv_columns.hpp"
#include "sim/error.hpp"
#include "sim/forwarding_device.hpp"
#include "sim/metered_device.hpp"
#include "sim/sim_device.hpp"
#include "sim/spec.hpp"
#include "sim/verdict.hpp"
#include "studies/recorded_address_device.hpp"
#include "studies/replay_account.hpp"
#include "studies/recording_start.hpp"
#include "studies/chrome_trace_export.hpp"
#include "studies/memory_viz_export.hpp"
#include "studies/replay_check.hpp"

namespace allocsim {
namespace {

using Action = RecordedSegmentEvent::Action;

constexpr Bytes kNoLimit = 1024_GiB;

// Counts the segments a policy reserves (cudaMalloc, or a map of physical pages) and the
// most the device ever held, inside a call too (the OOM path reserves, then releases).
class CountingDevice final : public ForwardingDevice {
 public:
  explicit CountingDevice(Device& inner) : ForwardingDevice(inner) {}

  std::optional<Segment> malloc(Bytes bytes) override {
    auto segment = ForwardingDevice::malloc(bytes);
    if (segment) ++allocs;
    peak = std::max(peak, used());
    return segment;
  }
  std::optional<Segment> create_physical(Bytes bytes) override {
    auto page = ForwardingDevice::create_physical(bytes);
    peak = std::max(peak, used());
    return page;
  }
  void map(Addr at, std::span<const Segment> pages) override {
    ++allocs;
    ForwardingDevice::map(at, pages);
  }

  std::size_t allocs = 0;
  Bytes peak = 0;
};

// The bytes the recorded run held when it ran out of memory: the start's segments and
// every segment event before the OOM, the releases inside its failed malloc included
// (they share its event index with the next event's reservations, which come after it).
Bytes reserved_at(const TorchRecording& recording, const RecordedOom& oom) {
  Bytes reserved = 0;
  for (const RecordedSegment& segment : recording.segments_at_start) reserved += segment.size;
  for (const RecordedSegmentEvent& event : recording.segment_events) {
    const bool gives = event.action == Action::alloc || event.action == Action::map;
    if (event.during_event > oom.before_event || (event.during_event == oom.before_event && gives)) continue;
    reserved = gives ? reserved + event.size : reserved - std::min(reserved, event.size);
  }
  return reserved;
}

// What the recording itself shows. Its allocated bytes are the trace's sizes rounded as
// PyTorch rounds them: a block's unsplit rest, which PyTorch counts too, is not in the
// trace (replay_from_recording takes the exact replay's figure, which has it).
WhatIfOutcome recorded_outcome(const TorchRecording& recording) {
  WhatIfOutcome outcome;
  outcome.policy = to_string(recorded_spec(recording));
  outcome.start = "as recorded";
  Bytes reserved = 0;
  for (const RecordedSegment& segment : recording.segments_at_start) reserved += segment.size;
  outcome.peak_reserved = reserved;
  for (const RecordedSegmentEvent& event : recording.segment_events) {
    const bool gives = event.action == Action::alloc || event.action == Action::map;
    reserved = gives ? reserved + event.size : reserved - std::min(reserved, event.size);
    outcome.peak_reserved = std::max(outcome.peak_reserved, reserved);
    outcome.device_allocs += gives ? 1 : 0;
  }
  const RoundupDivisions divisions = recorded_divisions(recording.settings);
  const Trace& trace = recording.trace;
  std::vector<Bytes> size(trace.allocations());
  Bytes allocated = 0;
  for (std::size_t i = 0; i < trace.events.size(); ++i) {
    const Event& event = trace.events[i];
    if (event.op == Op::alloc) {
      const std::size_t id = index_of(event.id);
      const bool known = i < recording.preexisting.size() && recording.preexisting[i].block_size;
      size[id] = known ? *recording.preexisting[i].block_size : torch_round_size(trace.bytes_of(event.id), divisions);
      allocated += size[id];
      outcome.peak_allocated = std::max(outcome.peak_allocated, allocated);
    } else if (event.op == Op::free) {
      allocated -= size[index_of(event.id)];
    }
  }
  outcome.ooms = recording.ooms.size();
  if (!recording.ooms.empty()) {
    const RecordedOom& oom = recording.ooms.front();
    outcome.first_oom = "before trace event " + std::to_string(oom.before_event) + ": " + format_bytes(oom.size) +
                        " with " + format_bytes(oom.device_free) + " free on the device";
  }
  return outcome;
}

// `caching` and `expandable` take the recorded settings, the user's keys replacing them.
Spec with_recorded_settings(const Spec& user, const TorchRecording& recording) {
  Spec merged = caching_spec_for(recording.settings);
  merged.name = user.name;
  for (const auto& [key, value] : user.args) set_arg(merged, key, value);
  return merged;
}

// One policy's replay of the recording. `exporters` and `recorders` watch it as
// ReplayAccount says; `run` is its account.
WhatIfOutcome replay_one(const TorchRecording& recording, const std::shared_ptr<const Trace>& shared_trace,
                         const RecordingPolicy& given, const DeviceSpec& device_spec, const std::vector<bool>& in_alloc,
                         std::vector<std::string>& ambiguous_sizes, std::span<Observer* const> exporters = {},
                         std::span<Observer* const> recorders = {}) {
  const PolicyInfo* row = given.spec ? given.spec->row : nullptr;
  // PyTorch's own allocator takes the recorded settings; the spec as run is the one shown.
  std::optional<PolicySpec> as_run;
  if (given.spec) as_run = policy_spec(row->adoption ? with_recorded_settings(given.spec->spec, recording) : given.spec->spec);
  WhatIfOutcome outcome;
  outcome.policy = as_run ? as_run->text : given.maker.text;
  outcome.torch_setting = given.spec ? torch_setting(given.spec->spec, recording.settings.conf) : std::string("# ").append(given.maker.text);

  const Bytes context = device_spec.context_overhead;  // charged from the start, as the process's own
  SimDevice sim_device(device_spec);
  RecordedAddressDevice placed(sim_device, recorded_placements(recording));  // ties broken as PyTorch's were
  CountingDevice counting(placed);
  Bytes metered_peak = 0;
  MeteredDevice device(counting, metered_peak);  // what the account counts and tells the observers
  ReplayAccount account(shared_trace, outcome.policy, device_spec, exporters, recorders);

  const std::unique_ptr<Policy> policy = std::move((as_run ? as_run->make(device) : given.maker.make(device)).policy);
  // Adopted where the policy's segments are of the recording's kind (refuse_unrebuildable
  // leaves no mixed start); the other kind places the live blocks, as any policy does.
  std::unique_ptr<RecordingAdoption> adopting = row && row->adoption ? row->adoption(*policy) : nullptr;
  if (adopting && adopting->expandable() != recorded_expandable(recording)) adopting.reset();
  account.watch(*policy, device);
  const Trace& trace = recording.trace;
  policy->prepare(ReplaySetup{.allocations = trace.allocations() + recording.ooms.size()});

  RebuiltStart start;
  if (adopting) {
    start = adopt_recorded_start(recording, *adopting, *policy, recorded_divisions(recording.settings));
    outcome.start = "recorded segments adopted";
    if (start.released_segments != 0) {
      outcome.start += "; " + std::to_string(start.released_segments) + " cached free of them (" +
                       format_bytes(start.released) + ") released for room, as PyTorch's OOM path does";
    }
    if (ambiguous_sizes.empty()) ambiguous_sizes = start.ambiguous_sizes;
  } else {
    start = place_recorded_start(recording, *policy);
    outcome.start = "live blocks placed";
  }
  std::vector<bool> alive(trace.allocations(), false);
  for (std::size_t i = 0; i < recording.preexisting.size(); ++i) alive[index_of(trace.events[i].id)] = true;
  for (const AllocId id : start.unserved) alive[index_of(id)] = false;
  for (std::size_t i = 0; i < recording.preexisting.size(); ++i) {
    const Event& event = trace.events[i];
    account.serving(event.time, i, event.stream);
    if (alive[index_of(event.id)]) {
      account.placed(start.live[index_of(event.id)]);
    } else {
      account.failed(trace.bytes_of(event.id), event.id);
    }
  }
  const auto failed = [&](const std::string& where) {
    if (outcome.ooms++ == 0) outcome.first_oom = where;
  };
  if (!start.unserved.empty()) {
    const std::string live = std::to_string(recording.preexisting.size()) + " blocks live when the recording began (" +
                             format_bytes(start.live_bytes) + ")";
    const Bytes room = device_spec.capacity - context;
    const std::string card = format_bytes(room) + (context == 0 ? "" : " left beside the CUDA context");
    failed(start.live_bytes > room
               ? "at the start: the " + live + " alone exceed the " + card +
                     (context == 0 ? " capacity" : "") +
                     "; no allocator holds them, so this card cannot run from where the recording began"
               : "at the start: " + std::to_string(start.unserved.size()) + " of the " + live +
                     " found no room on " + card);
    outcome.ooms += start.unserved.size() - 1;
  }
  counting.allocs = 0;  // the start's segments are not the trace's, as in the recorded column
  account.note_peak();
  if (!recording.preexisting.empty()) account.event_done();

  std::size_t next_oom = 0;
  const auto replay_ooms_before = [&](std::size_t i) {
    for (; next_oom < recording.ooms.size() && recording.ooms[next_oom].before_event <= i; ++next_oom) {
      const RecordedOom& oom = recording.ooms[next_oom];
      const auto id = static_cast<AllocId>(trace.allocations() + next_oom);
      const Nanos now = i < trace.events.size() ? trace.events[i].time : trace.events.empty() ? Nanos{} : trace.events.back().time;
      account.serving(now, i, oom.stream);
      const Allocation block = policy->allocate(Request{id, oom.size, oom.stream, now});
      if (!block) {
        failed("the recorded OOM before trace event " + std::to_string(i) + ": " + format_bytes(oom.size));
        account.failed(oom.size, std::nullopt);
        continue;
      }
      account.note_peak();
      account.outside(*block);
      policy->deallocate(*block, now);
    }
  };
  for (std::size_t i = recording.preexisting.size(); i < trace.events.size(); ++i) {
    replay_ooms_before(i);
    const Event& event = trace.events[i];
    const std::size_t id = index_of(event.id);
    account.serving(event.time, i, event.stream);
    if (event.op == Op::alloc) {
      const Allocation block = policy->allocate(Request{event.id, trace.bytes_of(event.id), event.stream, event.time});
      if (block) {
        start.live[id] = *block;
        alive[id] = true;
        account.placed(*block);
        account.note_peak();
      } else {
        failed("trace event " + std::to_string(i) + ": " + format_bytes(trace.bytes_of(event.id)));
        account.failed(trace.bytes_of(event.id), event.id);
      }
    } else if (event.op == Op::free) {
      if (alive[id]) {
        account.freed(start.live[id]);
        policy->deallocate(start.live[id], event.time);
      }
      alive[id] = false;
    } else if (!in_alloc[i]) {
      policy->release_cached();
    }
    account.event_done();
  }
  replay_ooms_before(trace.events.size());
  outcome.device_allocs = counting.allocs;
  outcome.peak_reserved = std::max(counting.peak, context) - context;  // less what the context held throughout
  outcome.peak_allocated = account.tenant().peak_allocated;
  outcome.run = account.finish(counting.peak);
  // Blocks still live go back before the policy does (its destructor returns its segments).
  for (std::size_t id = 0; id < alive.size(); ++id) {
    if (alive[id]) policy->deallocate(start.live[id], trace.events.empty() ? Nanos{} : trace.events.back().time);
  }
  return outcome;
}

MetricValue exact_count(std::size_t n) { return std::uint64_t{n}; }

// A replayed side's one tenant (none on the recorded side, whose OOMs have no kind).
const TenantResult* replayed_tenant(const WhatIfRow& r) {
  if (r.is_recording || r.outcome->run.tenants.empty()) return nullptr;
  return &r.outcome->run.tenants.front();
}

const OomRecord* replayed_first_oom(const WhatIfRow& r) {
  const TenantResult* tenant = replayed_tenant(r);
  return tenant ? tenant->first_oom() : nullptr;
}

// In the CSV's order; the fields it has never had (in_csv false) sit where the terminal's
// table shows them.
const std::array<Column<WhatIfRow>, 16> kColumns{{
    {.name = "recording", .unit = Unit::text, .help = "the snapshot file",
     .get = [](const WhatIfRow& r) -> MetricValue { return *r.recording; }, .in_table = false},
    {.name = "side", .unit = Unit::text, .help = "recorded (what PyTorch did) or simulated",
     .get = [](const WhatIfRow& r) -> MetricValue { return std::string(r.is_recording ? "recorded" : "simulated"); },
     .label = ""},
    {.name = "policy", .unit = Unit::text, .help = "the spec replayed; the recorded settings' spec on the recorded row",
     .get = [](const WhatIfRow& r) -> MetricValue { return r.outcome->policy; }},
    {.name = "start", .unit = Unit::text, .help = "how the replay began",
     .get = [](const WhatIfRow& r) -> MetricValue { return r.outcome->start; }},
    {.name = "capacity_bytes", .unit = Unit::bytes, .help = "the device replayed on",
     .get = [](const WhatIfRow& r) -> MetricValue { return r.what_if->capacity; },
     .shown = [](const WhatIfRow& r) { return format_bytes_exact(r.what_if->capacity); }, .in_table = false},
    {.name = "peak_reserved_bytes", .unit = Unit::bytes, .help = "bytes held from the device, at the most",
     .get = [](const WhatIfRow& r) -> MetricValue { return r.outcome->peak_reserved; },
     .shown = [](const WhatIfRow& r) { return format_bytes_exact(r.outcome->peak_reserved); }, .label = "reserved peak"},
    {.name = "peak_allocated_bytes", .unit = Unit::bytes, .help = "live block bytes, at the most",
     .get = [](const WhatIfRow& r) -> MetricValue { return r.outcome->peak_allocated; },
     .shown = [](const WhatIfRow& r) { return format_bytes_exact(r.outcome->peak_allocated); }, .label = "allocated peak"},
    {.name = "device_mallocs", .unit = Unit::count, .help = "segments reserved (cudaMalloc calls or page maps)",
     .get = [](const WhatIfRow& r) { return exact_count(r.outcome->device_allocs); }, .label = "segments reserved"},
    {.name = "oom_count", .unit = Unit::count, .help = "requests not served",
     .get = [](const WhatIfRow& r) { return exact_count(r.outcome->ooms); }, .label = "OOMs"},
    {.name = "verdict", .unit = Unit::text, .help = "the run verdict of a replayed side: fits, capacity, fragmentation, reservation, hang",
     .get = [](const WhatIfRow& r) -> MetricValue {
       const TenantResult* tenant = replayed_tenant(r);
       if (!tenant) return {};
       return std::string(verdict_word(verdict_of(r.outcome->run, *tenant)));
     },
     .label = "run verdict", .in_csv = false},
    {.name = "at_the_request", .unit = Unit::text, .help = "a replayed side's OOMs counted by their kind at the request, the first OOM's first",
     .get = [](const WhatIfRow& r) -> MetricValue {
       const TenantResult* tenant = replayed_tenant(r);
       if (!tenant) return {};
       return describe_request_kinds(*tenant);
     },
     .label = "OOMs at the request", .in_csv = false},
    {.name = "avoided_recorded_oom", .unit = Unit::text, .help = "yes/no; empty on the recorded row or when none was recorded",
     .get = [](const WhatIfRow& r) -> MetricValue {
       if (r.is_recording || !r.what_if->recorded_oom()) return {};
       return std::string(r.outcome->ooms == 0 ? "yes" : "no");
     },
     .shown = [](const WhatIfRow& r) -> std::string {
       if (!r.what_if->recorded_oom()) return "no OOM recorded";
       if (r.is_recording) return "-";
       return r.outcome->ooms == 0 ? "yes" : "no";
     },
     .label = "avoided the recorded OOM"},
    {.name = "first_oom", .unit = Unit::text, .help = "where the first OOM was, for a person (told beside the table)",
     .get = [](const WhatIfRow& r) -> MetricValue {
       if (!r.outcome->first_oom) return {};
       return *r.outcome->first_oom;
     },
     .in_csv = false, .in_table = false},
    {.name = "first_oom_kind", .unit = Unit::text, .help = "a replayed side's run verdict at its first OOM",
     .get = [](const WhatIfRow& r) -> MetricValue {
       const OomRecord* oom = replayed_first_oom(r);
       if (!oom) return {};
       return std::string(name_of(oom->kind));
     },
     .in_csv = false, .in_table = false},
    {.name = "first_oom_request_kind", .unit = Unit::text, .help = "a replayed side's first OOM's kind at the request",
     .get = [](const WhatIfRow& r) -> MetricValue {
       const OomRecord* oom = replayed_first_oom(r);
       if (!oom) return {};
       return std::string(name_of(oom->request_kind));
     },
     .in_csv = false, .in_table = false},
    {.name = "torch_setting", .unit = Unit::text, .help = "what to set in PyTorch for this side's policy (told under the table for the best)",
     .get = [](const WhatIfRow& r) -> MetricValue { return r.outcome->torch_setting; }, .in_csv = false, .in_table = false},
}};

}  // namespace

std::optional<std::size_t> WhatIf::best() const {
  std::optional<std::size_t> best;
  for (std::size_t i = 0; i < replayed.size(); ++i) {
    if (replayed[i].ooms > 0) continue;
    if (!best || replayed[i].peak_reserved < replayed[*best].peak_reserved) best = i;
  }
  return best;
}

std::optional<Bytes> recorded_capacity(const TorchRecording& recording) {
  std::optional<Bytes> capacity;
  for (const RecordedOom& oom : recording.ooms) {
    const Bytes could_hold = reserved_at(recording, oom) + oom.device_free;
    capacity = std::min(capacity.value_or(could_hold), could_hold);
  }
  return capacity;
}

WhatIf replay_from_recording(const TorchRecording& recording, std::span<const RecordingPolicy> policies,
                             const ReplayDevice& device, const ExportFiles& exports, bool record) {
  refuse_unrebuildable(recording, "replay");
  if (policies.empty()) throw Error("replay needs at least one policy");
  if (exports.any() && policies.size() != 1) {
    throw Error("--memory-viz and --chrome-trace export one replay: give one --policy (" +
                std::to_string(policies.size()) + " given)");
  }
  WhatIf what_if;
  what_if.recorded = recorded_outcome(recording);
  if (device.device) {
    what_if.device = *device.device;
    what_if.capacity_source = device.source;
  } else if (const std::optional<Bytes> could_hold = recorded_capacity(recording)) {
    what_if.device.capacity = *could_hold;
    what_if.capacity_source = "what the recorded run could hold: its reserved bytes at the OOM plus the device_free "
                              "PyTorch recorded";
  } else {
    what_if.device.capacity = kNoLimit;
    what_if.capacity_source = "no limit (the recording ran without an OOM; set one with --capacity)";
  }
  what_if.capacity = what_if.device.capacity;
  // replay-check tells which recorded releases were inside an alloc, and whether `caching`
  // is the recording (on an unlimited device: its failures are the recorded OOMs).
  const ReplayCheck check = replay_check(recording, kNoLimit);
  // An exact replay's blocks are PyTorch's, unsplit rests included: its allocated peak is
  // the one PyTorch counted (a block of ambiguous size counts as the replay took it).
  if (check.exact()) what_if.recorded.peak_allocated = check.simulated_peak_allocated;
  what_if.replay_check_divergence = check.exact() ? std::nullopt : check.divergence ? check.divergence : check.final_state;
  std::vector<bool> in_alloc(recording.trace.events.size(), false);
  for (const std::size_t row : check.releases_in_allocs) in_alloc[row] = true;
  what_if.releases_in_allocs = check.releases_in_allocs.size();
  // The exporters and the report see each replay as a one-tenant run of the recording's trace.
  const auto trace = std::make_shared<const Trace>(recording.trace);
  for (const RecordingPolicy& given : policies) {
    Scenario scenario;
    scenario.device = what_if.device;
    scenario.on_oom = OnOom::continue_run;  // a failed request is skipped, with its free
    scenario.tenants.push_back(TenantSpec{trace, given.maker, 0});
    std::optional<MemoryVizExport> memory_viz;
    std::optional<ChromeTraceExport> chrome_trace;
    std::vector<Observer*> exporters;
    if (!exports.memory_viz.empty()) exporters.push_back(&memory_viz.emplace(scenario));
    if (!exports.chrome_trace.empty()) exporters.push_back(&chrome_trace.emplace(scenario));
    std::shared_ptr<RunRecorders> recorders = record ? std::make_shared<RunRecorders>() : nullptr;
    const std::vector<Observer*> recording_observers = recorders ? recorders->observers() : std::vector<Observer*>{};
    WhatIfOutcome outcome;
    try {
      outcome = replay_one(recording, trace, given, what_if.device, in_alloc, what_if.ambiguous_sizes, exporters,
                           recording_observers);
    } catch (const Error& error) {
      if (policies.size() == 1) throw;
      what_if.failed.push_back({given.text(), error.what()});
      continue;
    }
    if (memory_viz) write_file_atomically(exports.memory_viz, [&](std::ostream& out) { memory_viz->write(out); });
    if (chrome_trace) write_file_atomically(exports.chrome_trace, [&](std::ostream& out) { chrome_trace->write(out); });
    outcome.scenario = std::move(scenario);
    outcome.recorders = std::move(recorders);
    what_if.replayed.push_back(std::move(outcome));
  }
  if (what_if.replayed.empty()) throw Error(what_if.failed.front().policy + ": " + what_if.failed.front().error);
  return what_if;
}

std::span<const Column<WhatIfRow>> what_if_columns() { return kColumns; }

std::vector<WhatIfRow> what_if_rows(const WhatIf& what_if, const std::string& recording_name) {
  std::vector<WhatIfRow> rows{{&recording_name, &what_if, &what_if.recorded, true}};
  for (const WhatIfOutcome& outcome : what_if.replayed) rows.push_back({&recording_name, &what_if, &outcome, false});
  return rows;
}

void write_what_if_csv(std::ostream& out, const WhatIf& what_if, const std::string& recording_name) {
  write_csv_columns<WhatIfRow>(out, kColumns, what_if_rows(what_if, recording_name));
}

std::vector<ReportedRun> what_if_reported(const WhatIf& what_if, const std::string& recording_name) {
  std::vector<ReportedRun> reported;
  for (const WhatIfOutcome& outcome : what_if.replayed) {
    if (!outcome.recorders) throw std::logic_error("a what-if replayed without the report's recorders");
    const WhatIfRow row{&recording_name, &what_if, &outcome, false};
    reported.push_back(ReportedRun{outcome.policy, outcome.scenario, outcome.run, *outcome.recorders,
                                   columns_json<WhatIfRow>(kColumns, row)});
  }
  return reported;
}

nlohmann::json what_if_sides_json(const WhatIf& what_if, const std::string& recording_name) {
  nlohmann::json sides = nlohmann::json::array();
  for (const WhatIfRow& row : what_if_rows(what_if, recording_name)) sides.push_back(columns_json<WhatIfRow>(kColumns, row));
  return sides;
}

std::vector<std::vector<std::string>> what_if_table(const WhatIf& what_if, const std::string& recording_name) {
  return column_table<WhatIfRow>(kColumns, what_if_rows(what_if, recording_name));
}

}  // namespace allocsim
