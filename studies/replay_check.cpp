#include "studies/replay_check.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <sstream>
#include <vector>

#include "policies/caching.hpp"
#include "policies/registry.hpp"
#include "policies/torch_alloc_conf.hpp"
#include "sim/error.hpp"
#include "sim/forwarding_device.hpp"
#include "sim/sim_device.hpp"
#include "sim/spec.hpp"
#include "studies/recorded_address_device.hpp"
#include "studies/recording_start.hpp"

namespace allocsim {
namespace {

using Action = RecordedSegmentEvent::Action;

// A device that writes down every segment the policy reserves or releases (cudaMalloc,
// cudaFree, or the pages it maps and unmaps), and during which trace event.
class LoggingDevice final : public ForwardingDevice {
 public:
  explicit LoggingDevice(Device& inner) : ForwardingDevice(inner) {}

  std::optional<Segment> malloc(Bytes bytes) override {
    const auto segment = ForwardingDevice::malloc(bytes);
    if (segment && logging) calls.push_back({Action::alloc, segment->addr, bytes, 0, event});
    return segment;
  }
  void free(Segment segment) override {
    if (logging) calls.push_back({Action::free, segment.addr, segment.bytes, 0, free_event.value_or(event)});
    ForwardingDevice::free(segment);
  }
  void map(Addr at, std::span<const Segment> pages) override {
    if (logging) calls.push_back({Action::map, at, total_bytes(pages), 0, event});
    ForwardingDevice::map(at, pages);
  }
  void unmap(Addr at, Bytes bytes) override {
    if (logging) calls.push_back({Action::unmap, at, bytes, 0, event});
    ForwardingDevice::unmap(at, bytes);
  }

  bool logging = false;
  std::size_t event = 0;
  std::optional<std::size_t> free_event;  // where PyTorch's trace put the frees of this call, when elsewhere
  std::vector<RecordedSegmentEvent> calls;  // addresses are the simulated device's
};


std::string describe(const RecordedSegmentEvent& event) {
  return std::string(to_string(event.action)) + " at " + format_address(event.addr) + " of " + format_bytes(event.size) + " (" +
         std::to_string(event.size) + " B) at trace event " + std::to_string(event.during_event);
}

// What a recorded PYTORCH_CUDA_ALLOC_CONF entry sets (the table's reading); none for an
// entry PyTorch's parser would refuse, which no recording should hold.
std::optional<AllocConfSetting> recorded_entry(const std::string& key, const std::string& value) {
  try {
    return read_alloc_conf_entry(key, value, "recorded PYTORCH_CUDA_ALLOC_CONF");
  } catch (const Error&) {
    return std::nullopt;
  }
}

// The parameters of caching that the recorded settings' own fields carry: those come from
// the fields, which say what PyTorch applied.
bool carried_by_fields(std::string_view parameter) {
  return parameter == "max_split_size" || parameter == "roundup_power2_divisions" || parameter == "gc_threshold";
}

Bytes peak_reserved(Bytes start, const std::vector<RecordedSegmentEvent>& events) {
  Bytes reserved = start;
  Bytes peak = start;
  for (const RecordedSegmentEvent& event : events) {
    const bool gives = event.action == Action::alloc || event.action == Action::map;
    reserved = gives ? reserved + event.size : reserved - std::min(reserved, event.size);
    peak = std::max(peak, reserved);
  }
  return peak;
}

std::string divisions_list(const TorchAllocatorSettings& settings) {
  std::string list;
  bool any = false;
  for (const auto& [megabytes, divisions] : settings.roundup_power2_divisions) {
    list.append(list.empty() ? "[" : ",").append(std::to_string(megabytes)).append(":").append(std::to_string(divisions));
    any = any || divisions > 1;
  }
  return any ? list.append("]") : "0";
}

}  // namespace

Spec caching_spec_for(const TorchAllocatorSettings& settings) {
  Spec spec{"caching", {}};
  for (const auto& [key, value] : alloc_conf_entries(settings.conf)) {
    const std::optional<AllocConfSetting> setting = recorded_entry(key, value);
    if (setting && setting->kind == AllocConfSetting::Kind::parameter && !carried_by_fields(setting->name)) {
      spec.args.emplace_back(setting->name, setting->value);
    }
  }
  if (settings.max_split_size) spec.args.emplace_back("max_split_size", std::to_string(*settings.max_split_size));
  if (std::string list = divisions_list(settings); list != "0") spec.args.emplace_back("roundup_power2_divisions", std::move(list));
  if (settings.garbage_collection_threshold > 0) {
    std::ostringstream threshold;  // the stream's shortest form: 0.6
    threshold << settings.garbage_collection_threshold;
    spec.args.emplace_back("gc_threshold", threshold.str());
  }
  return spec;
}

UnmappedSettings unmapped_settings(const TorchAllocatorSettings& settings) {
  UnmappedSettings unmapped;
  for (const auto& [key, value] : alloc_conf_entries(settings.conf)) {
    const std::optional<AllocConfSetting> setting = recorded_entry(key, value);
    if (setting && setting->kind == AllocConfSetting::Kind::nothing) {
      unmapped.without_effect.push_back(key + ":" + value);
    } else if (!setting || (setting->kind == AllocConfSetting::Kind::policy && setting->name == "torch-async")) {
      unmapped.not_modelled.push_back(key + ":" + value);  // the recording's spec is caching's or expandable's
    }
  }
  return unmapped;
}

bool recorded_expandable(const TorchRecording& recording) {
  const auto expandable = [](const RecordedSegment& segment) { return segment.expandable; };
  const auto vmm = [](const RecordedSegmentEvent& event) {
    return event.action == Action::map || event.action == Action::unmap;
  };
  return recording.settings.expandable_segments ||
         std::any_of(recording.segments_at_start.begin(), recording.segments_at_start.end(), expandable) ||
         std::any_of(recording.segments_at_end.begin(), recording.segments_at_end.end(), expandable) ||
         std::any_of(recording.segment_events.begin(), recording.segment_events.end(), vmm);
}

Spec recorded_spec(const TorchRecording& recording) {
  Spec spec = caching_spec_for(recording.settings);
  if (recorded_expandable(recording)) spec.name = "expandable";
  return spec;
}

RoundupDivisions recorded_divisions(const TorchAllocatorSettings& settings) {
  return parse_roundup_divisions(divisions_list(settings));
}

namespace {

// An expandable recording's start is rebuilt range by range: each mapped segment the
// snapshot lists is taken as the start of its stream's and pool's range (PyTorch reserves
// one per stream and pool), so a second mapped piece of one range, whose gap was unmapped
// before the recording, and a native segment beside them cannot be rebuilt.
void refuse_unrebuildable_expandable(const TorchRecording& recording, std::string_view command) {
  if (!recorded_expandable(recording)) return;
  std::map<std::pair<Stream, bool>, Addr> range_at;
  for (const RecordedSegment& segment : recording.segments_at_start) {
    if (!segment.expandable) {
      throw Error("recorded with expandable segments, a native segment at " + format_address(segment.addr) +
                  " held when the recording began; " + std::string(command) + " rebuilds only expandable ones");
    }
    const auto [first, fresh] = range_at.emplace(std::pair{segment.stream, segment.small}, segment.addr);
    if (!fresh) {
      throw Error("the expandable segments at " + format_address(first->second) + " and " + format_address(segment.addr) +
                  " held when the recording began are mapped pieces of one range; " + std::string(command) +
                  " rebuilds a range only from its mapped start");
    }
  }
}

}  // namespace

void refuse_unrebuildable(const TorchRecording& recording, std::string_view command) {
  refuse_unrebuildable_expandable(recording, command);
  if (!recording.private_pools.empty()) {
    const PrivatePool& first = recording.private_pools.front();
    throw Error("private pool " + first.pool + " at " + first.entry +
                (recording.private_pools.size() > 1
                     ? " (and " + std::to_string(recording.private_pools.size() - 1) + " more)"
                     : std::string()) +
                ": a CUDA graph's or MemPool's segments, which " + std::string(command) + " does not keep apart yet");
  }
}

ReplayCheck replay_check(const TorchRecording& recording, Bytes capacity) {
  refuse_unrebuildable(recording, "replay-check");
  ReplayCheck check;
  // Never native segments where PyTorch's were expandable: the one VMM model replays them
  // (recorded_spec names the expandable policy then).
  const PolicySpec as_recorded = policy_spec(recorded_spec(recording));
  check.policy = as_recorded.text;
  UnmappedSettings unmapped = unmapped_settings(recording.settings);
  check.settings_not_modelled = std::move(unmapped.not_modelled);
  check.settings_without_effect = std::move(unmapped.without_effect);
  DeviceSpec spec;
  spec.capacity = capacity;
  SimDevice sim_device(spec);
  RecordedAddressDevice placed(sim_device, recorded_placements(recording));
  LoggingDevice device(placed);
  const std::unique_ptr<Policy> made = std::move(as_recorded.make(device).policy);
  Policy& policy = *made;
  const std::unique_ptr<RecordingAdoption> recorded = as_recorded.row->adoption(policy);
  const Trace& trace = recording.trace;
  policy.prepare(ReplaySetup{.allocations = trace.allocations() + recording.ooms.size()});
  const RoundupDivisions divisions = recorded_divisions(recording.settings);

  // The start: every segment the recording began with, holding the blocks allocated
  // before it, at the same offsets.
  RebuiltStart start = adopt_recorded_start(recording, *recorded, policy, divisions);
  if (!start.unserved.empty() || start.released_segments != 0) {
    throw Error("caching: cannot rebuild the recording's start: the device has no room for its segments (" +
                format_bytes(start.reserved) + " adopted on " + format_bytes(capacity) + ")");
  }
  const std::size_t preexisting = recording.preexisting.size();
  std::map<Addr, Addr>& simulated_at = start.simulated_at;
  const Bytes start_reserved = start.reserved;
  std::vector<Block>& live = start.live;
  check.ambiguous_sizes = std::move(start.ambiguous_sizes);
  check.preexisting = preexisting;
  check.segments_at_start = recording.segments_at_start.size();

  // The replay, the device's calls written down as they happen.
  // Each alloc's address against PyTorch's (the converter's `addresses`, one per alloc
  // event in order; none in a hand-built recording).
  const bool compare_addresses = !recording.addresses.empty();
  if (compare_addresses && recording.addresses.size() != trace.allocations()) {
    throw Error("the recording's addresses (" + std::to_string(recording.addresses.size()) +
                ") do not match its allocations (" + std::to_string(trace.allocations()) + ")");
  }
  device.logging = true;
  std::optional<std::string> stopped;
  std::optional<std::pair<std::size_t, std::string>> misplaced;  // the first event that differs but a segment's
  const auto note = [&](std::size_t at, std::string what) {
    if (!misplaced || at < misplaced->first) misplaced.emplace(at, std::move(what));
  };
  // PyTorch's OOMs, each a request that must fail: mallocs over the recorded free bytes
  // fail, so the policy goes through its release stages (logged) as PyTorch did.
  std::size_t next_oom = 0;
  const auto replay_ooms_before = [&](std::size_t i) {
    for (; next_oom < recording.ooms.size() && recording.ooms[next_oom].before_event <= i; ++next_oom) {
      const RecordedOom& oom = recording.ooms[next_oom];
      device.event = i;
      placed.limit_free(oom.device_free);
      const auto id = static_cast<AllocId>(trace.allocations() + next_oom);
      const Nanos now = i < trace.events.size() ? trace.events[i].time : trace.events.empty() ? Nanos{} : trace.events.back().time;
      const auto block = policy.allocate(Request{id, oom.size, oom.stream, now});
      placed.limit_free(std::nullopt);
      if (!block) {
        ++check.replayed_ooms;
        continue;
      }
      note(i, "trace event " + std::to_string(i) + ": PyTorch ran out of memory for " + format_bytes_exact(oom.size) + " with " +
                  format_bytes_exact(oom.device_free) + " free on the device; the replay served it at " + format_address(block->addr));
      policy.deallocate(*block, now);
    }
  };
  check.recorded_ooms = recording.ooms.size();
  // A release row that freed less than empty_cache() would, right before an alloc that
  // made a segment, was a partial release inside that alloc's failed cudaMalloc (with
  // max_split_size, PyTorch frees oversize blocks only until the request fits): the
  // replay fails that malloc once, and the policy releases what it would.
  std::vector<Bytes> freed_during(trace.events.size() + 1, 0);
  std::vector<bool> segment_made_during(trace.events.size() + 1, false);
  for (const RecordedSegmentEvent& event : recording.segment_events) {
    if (event.during_event > trace.events.size()) continue;
    if (event.action == Action::free) freed_during[event.during_event] += event.size;
    if (event.action == Action::alloc) segment_made_during[event.during_event] = true;
  }
  std::optional<std::size_t> failed_malloc_at;
  for (std::size_t i = preexisting; i < trace.events.size() && !stopped; ++i) {
    replay_ooms_before(i);
    const Event& event = trace.events[i];
    device.event = i;
    if (event.op == Op::alloc) {
      if (failed_malloc_at == i) {
        placed.fail_next_malloc();
        device.free_event = i - 1;
      }
      const auto block = policy.allocate(Request{event.id, trace.bytes_of(event.id), event.stream, event.time});
      device.free_event.reset();
      if (!block) {
        stopped = "trace event " + std::to_string(i) + ": the simulated allocator ran out of memory at " +
                  format_bytes(trace.bytes_of(event.id)) + " on a " + format_bytes(capacity) + " device";
      } else {
        live[index_of(event.id)] = *block;
        check.simulated_peak_allocated = std::max(check.simulated_peak_allocated, policy.stats().allocated);
        const std::size_t id = index_of(event.id);
        check.addresses_compared += compare_addresses ? 1 : 0;
        if (compare_addresses && block->addr != recording.addresses[id]) {
          note(i, "trace event " + std::to_string(i) + ": alloc of " + format_bytes_exact(block->requested) + " at " +
                      format_address(block->addr) + ", PyTorch placed it at " + format_address(recording.addresses[id]));
        }
      }
    } else if (event.op == Op::free) {
      policy.deallocate(live[index_of(event.id)], event.time);
    } else if (i + 1 < trace.events.size() && trace.events[i + 1].op == Op::alloc && segment_made_during[i + 1] &&
               freed_during[i] < policy.inspect(Detail::counters).releasable) {
      check.releases_in_allocs.push_back(i);
      if (recording.settings.garbage_collection_threshold > 0) {
        // Garbage collection inside that alloc: it frees the oldest cached segments, by a
        // memory fraction the snapshot does not record, so exactly those it freed are freed.
        for (const RecordedSegmentEvent& freed : recording.segment_events) {
          if (freed.during_event != i || freed.action != Action::free) continue;
          const auto adopted = simulated_at.find(freed.addr);  // else made in the replay, at PyTorch's address
          if (!recorded->release_segment(adopted == simulated_at.end() ? freed.addr : adopted->second)) {
            note(i, "trace event " + std::to_string(i) + ": PyTorch's garbage collection freed the segment at " +
                        format_address(freed.addr) + ", which the replay does not hold wholly free");
          }
        }
        ++check.gc_releases;
      } else {
        failed_malloc_at = i + 1;
        ++check.partial_releases;
      }
    } else {
      policy.release_cached();
    }
    check.events = i + 1;
  }
  if (!stopped) replay_ooms_before(trace.events.size());
  check.recorded_segment_events = recording.segment_events.size();
  check.simulated_segment_events = device.calls.size();
  check.recorded_peak_reserved = peak_reserved(start_reserved, recording.segment_events);
  check.simulated_peak_reserved = peak_reserved(start_reserved, device.calls);

  // Segment events, in order: same action, size and event; a free names the segment the
  // matching alloc made.
  const std::size_t count = std::max(recording.segment_events.size(), device.calls.size());
  std::size_t diverged_at = trace.events.size();  // the trace event of the segment divergence
  for (std::size_t i = 0; i < count && !check.divergence; ++i) {
    const std::string where = "segment event " + std::to_string(i) + ": ";
    if (i >= device.calls.size()) {
      check.divergence = where + "expected " + describe(recording.segment_events[i]) + ", got none";
      diverged_at = recording.segment_events[i].during_event;
      break;
    }
    if (i >= recording.segment_events.size()) {
      check.divergence = where + "expected none, got " + describe(device.calls[i]);
      diverged_at = device.calls[i].during_event;
      break;
    }
    const RecordedSegmentEvent& expected = recording.segment_events[i];
    const RecordedSegmentEvent& got = device.calls[i];
    bool same = expected.action == got.action && expected.size == got.size && expected.during_event == got.during_event;
    if (same && expected.action == Action::alloc) {
      simulated_at[expected.addr] = got.addr;
    } else if (same && (expected.action == Action::map || expected.action == Action::unmap)) {
      same = expected.addr == got.addr;  // ranges are reserved where PyTorch's were
    } else if (same) {
      const auto known = simulated_at.find(expected.addr);
      same = known != simulated_at.end() && known->second == got.addr;
    }
    if (!same) {
      check.divergence = where + "expected " + describe(expected) + ", got " + describe(got);
      diverged_at = std::min(expected.during_event, got.during_event);
    }
  }
  if (misplaced && (!check.divergence || misplaced->first < diverged_at)) check.divergence = misplaced->second;
  if (stopped && !check.divergence) check.divergence = *stopped;
  if (check.divergence) return check;

  // The final layout against the snapshot's, segment by segment, block by block.
  check.final_state_compared = true;
  const std::vector<RecordingAdoption::SegmentLayout> layout = recorded->layout();
  std::map<Addr, const RecordingAdoption::SegmentLayout*> by_address;
  for (const auto& segment : layout) by_address[segment.addr] = &segment;
  for (const RecordedSegment& expected : recording.segments_at_end) {
    const auto mapped = simulated_at.find(expected.addr);
    const auto found = expected.expandable ? by_address.find(expected.addr)  // at the recorded address
                       : mapped == simulated_at.end() ? by_address.end()
                                                      : by_address.find(mapped->second);
    const std::string where = "the snapshot's segment at " + format_address(expected.addr) + " (" + format_bytes(expected.size) + ")";
    if (found == by_address.end()) {
      check.final_state = where + " is not held at the end of the replay";
      return check;
    }
    const RecordingAdoption::SegmentLayout& got = *found->second;
    by_address.erase(found);
    for (std::size_t b = 0; b < std::max(expected.blocks.size(), got.blocks.size()); ++b) {
      if (b >= expected.blocks.size() || b >= got.blocks.size()) {
        check.final_state = where + " has " + std::to_string(expected.blocks.size()) + " blocks; the replay's has " +
                            std::to_string(got.blocks.size());
        return check;
      }
      const RecordedBlock& want = expected.blocks[b];
      const RecordingAdoption::LaidBlock& have = got.blocks[b];
      if (want.addr - expected.addr != have.addr - got.addr || want.size != have.size ||
          want.allocated != have.allocated) {
        const auto state = [](bool allocated) { return allocated ? "allocated" : "free"; };
        check.final_state = where + ", block " + std::to_string(b) + ": expected " + state(want.allocated) + " " +
                            std::to_string(want.size) + " B at offset " + std::to_string(want.addr - expected.addr) +
                            ", got " + state(have.allocated) + " " + std::to_string(have.size) + " B at offset " +
                            std::to_string(have.addr - got.addr);
        return check;
      }
    }
  }
  if (!by_address.empty()) {
    check.final_state = std::to_string(by_address.size()) + " segments held at the end of the replay are not in the "
                        "snapshot (the first: " + format_bytes(by_address.begin()->second->size) + ")";
  }
  return check;
}

}  // namespace allocsim
