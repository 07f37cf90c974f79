#include "studies/replay_from_recording.hpp"

#include <algorithm>
#include <array>
#include <memory>

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

struct CsvRow {
  const std::string* recording;
  const WhatIf* what_if;
  const WhatIfOutcome* outcome;
  bool is_recording;
};

const std::array<Column<CsvRow>, 10> kColumns{{
    {"recording", Unit::text, "the snapshot file", [](const CsvRow& r) -> MetricValue { return *r.recording; }},
    {"side", Unit::text, "recorded (what PyTorch did) or simulated",
     [](const CsvRow& r) -> MetricValue { return std::string(r.is_recording ? "recorded" : "simulated"); }},
    {"policy", Unit::text, "the spec replayed; the recorded settings' spec on the recorded row",
     [](const CsvRow& r) -> MetricValue { return r.outcome->policy; }},
    {"start", Unit::text, "how the replay began", [](const CsvRow& r) -> MetricValue { return r.outcome->start; }},
    {"capacity_bytes", Unit::bytes, "the device replayed on",
     [](const CsvRow& r) -> MetricValue { return r.what_if->capacity; }},
    {"peak_reserved_bytes", Unit::bytes, "bytes held from the device, at the most",
     [](const CsvRow& r) -> MetricValue { return r.outcome->peak_reserved; }},
    {"peak_allocated_bytes", Unit::bytes, "live block bytes, at the most",
     [](const CsvRow& r) -> MetricValue { return r.outcome->peak_allocated; }},
    {"device_mallocs", Unit::count, "segments reserved (cudaMalloc calls or page maps)",
     [](const CsvRow& r) -> MetricValue { return std::uint64_t{r.outcome->device_allocs}; }},
    {"oom_count", Unit::count, "requests not served", [](const CsvRow& r) -> MetricValue { return std::uint64_t{r.outcome->ooms}; }},
    {"avoided_recorded_oom", Unit::text, "yes/no; empty on the recorded row or when none was recorded",
     [](const CsvRow& r) -> MetricValue {
       if (r.is_recording || !r.what_if->recorded_oom()) return {};
       return std::string(r.outcome->ooms == 0 ? "yes" : "no");
     }},
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

WhatIf replay_from_recording(const TorchRecording& recording, std::span<const std::string> policies,
                             const ReplayDevice& device, const ExportFiles& exports, bool record) {
  std::vector<RecordingPolicy> read;
  for (const std::string& policy : policies) read.emplace_back(parse_policy_spec(policy));
  return replay_from_recording(recording, read, device, exports, record);
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

void write_what_if_csv(std::ostream& out, const WhatIf& what_if, const std::string& recording_name) {
  std::vector<CsvRow> rows{{&recording_name, &what_if, &what_if.recorded, true}};
  for (const WhatIfOutcome& outcome : what_if.replayed) rows.push_back({&recording_name, &what_if, &outcome, false});
  write_csv_columns<CsvRow>(out, kColumns, rows);
}

}  // namespace allocsim
