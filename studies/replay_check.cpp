#include "studies/replay_check.hpp"

#include <algorithm>
#include <map>
#include <sstream>
#include <vector>

#include "policies/caching.hpp"
#include "sim/error.hpp"
#include "sim/forwarding_device.hpp"
#include "sim/sim_device.hpp"
#include "sim/spec.hpp"
#include "studies/recorded_address_device.hpp"

namespace allocsim {
namespace {

using Action = RecordedSegmentEvent::Action;

// A device that writes down every segment the policy reserves or releases, and during
// which trace event.
class LoggingDevice final : public ForwardingDevice {
 public:
  explicit LoggingDevice(Device& inner) : ForwardingDevice(inner) {}

  std::optional<Segment> malloc(Bytes bytes) override {
    const auto segment = ForwardingDevice::malloc(bytes);
    if (segment && logging) calls.push_back({Action::alloc, segment->addr, bytes, 0, event});
    return segment;
  }
  void free(Segment segment) override {
    if (logging) calls.push_back({Action::free, segment.addr, segment.bytes, 0, event});
    ForwardingDevice::free(segment);
  }

  bool logging = false;
  std::size_t event = 0;
  std::vector<RecordedSegmentEvent> calls;  // addresses are the simulated device's
};

std::string hex(Addr addr) {
  std::ostringstream text;
  text << "0x" << std::hex << addr;
  return text.str();
}

// "1 MiB (1048576 B)", or "700 B" where the two say the same.
std::string sized(Bytes bytes) {
  const std::string exact = std::to_string(bytes) + " B";
  const std::string short_form = format_bytes(bytes);
  return short_form == exact ? exact : short_form + " (" + exact + ")";
}

std::string describe(const RecordedSegmentEvent& event) {
  return std::string(to_string(event.action)) + " at " + hex(event.addr) + " of " + format_bytes(event.size) + " (" +
         std::to_string(event.size) + " B) at trace event " + std::to_string(event.during_event);
}

// PYTORCH_CUDA_ALLOC_CONF as c10's parser splits it: entries between commas (not those
// inside a [...] list), each key:value; spaces ignored.
std::vector<std::pair<std::string, std::string>> conf_entries(std::string_view conf) {
  std::vector<std::pair<std::string, std::string>> entries;
  std::string entry;
  int depth = 0;
  const auto flush = [&] {
    if (entry.empty()) return;
    const auto colon = entry.find(':');
    entries.emplace_back(entry.substr(0, colon), colon == std::string::npos ? "" : entry.substr(colon + 1));
    entry.clear();
  };
  for (const char c : conf) {
    if (c == ' ' || c == '\t') continue;
    if (c == '[') ++depth;
    if (c == ']') --depth;
    if (c == ',' && depth <= 0) {
      flush();
    } else {
      entry += c;
    }
  }
  flush();
  return entries;
}

// Keys the settings' own fields carry (the spec is built from those), keys without an
// effect on what a single-threaded replay allocates, and keys the spec maps from the conf.
bool in_settings_fields(std::string_view key) {
  return key == "max_split_size_mb" || key == "garbage_collection_threshold" || key == "roundup_power2_divisions" ||
         key == "expandable_segments";
}
bool without_effect(std::string_view key, std::string_view value) {
  return key == "release_lock_on_cudamalloc" || key.starts_with("pinned_") || (key == "backend" && value == "native");
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

// A block allocated before the recording and freed in it: the snapshot no longer shows
// its size, so it is what PyTorch's rules make of the request in the room it had. A
// large-pool block keeps a remainder of 1 MiB or less (it is not split off), and an
// oversize block is never split. Where another rule fits the room as well, `other` says
// which: a block rounded exactly with a free gap after it (split off when the block was
// carved from a larger one, then left), or an oversize block from a fresh segment.
struct InferredSize {
  Bytes size;
  std::optional<std::string> other;
};
InferredSize inferred_block_size(const PreexistingBlock& block, Bytes room, bool small,
                                 const RoundupDivisions& divisions, std::optional<Bytes> max_split_size) {
  const Bytes rounded = torch_round_size(block.requested, divisions);
  if (rounded > room) {
    throw Error("the block at " + hex(block.addr) + " (" + format_bytes(rounded) +
                ") does not fit before the next block of its segment");
  }
  const auto both = [&](Bytes chosen, const std::string& why, Bytes alternative, const std::string& other_why) {
    return InferredSize{chosen, "the block at " + hex(block.addr) + " is " + std::to_string(chosen) + " B (" + why +
                                    ") or " + std::to_string(alternative) + " B (" + other_why +
                                    "); replayed as the first"};
  };
  if (small) return {rounded, {}};  // sizes are 512-B multiples: a rest is 0 or split off
  if (max_split_size && rounded >= *max_split_size) {
    const Bytes fresh = (rounded + 2_MiB - 1) / 2_MiB * 2_MiB;
    if (fresh < room) {
      return both(room, "an oversize cached block, never split", fresh, "a fresh segment's, with a free gap after it");
    }
    return {room, {}};
  }
  if (room - rounded <= 1_MiB && room > rounded) {
    return both(room, "the rest of 1 MiB or less left unsplit", rounded, "rounded, with a free gap after it");
  }
  return {room - rounded <= 1_MiB ? room : rounded, {}};
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

std::string caching_spec_for(const TorchAllocatorSettings& settings) {
  Spec spec{"caching", {}};
  for (const auto& [key, value] : conf_entries(settings.conf)) {
    if (key == "max_non_split_rounding_mb") spec.args.emplace_back("max_non_split_rounding", value + "MiB");
  }
  if (settings.max_split_size) spec.args.emplace_back("max_split_size", std::to_string(*settings.max_split_size));
  if (std::string list = divisions_list(settings); list != "0") spec.args.emplace_back("roundup_power2_divisions", std::move(list));
  if (settings.garbage_collection_threshold > 0) {
    std::ostringstream threshold;  // the stream's shortest form: 0.6
    threshold << settings.garbage_collection_threshold;
    spec.args.emplace_back("gc_threshold", threshold.str());
  }
  return to_string(spec);
}

UnmappedSettings unmapped_settings(const TorchAllocatorSettings& settings) {
  UnmappedSettings unmapped;
  for (const auto& [key, value] : conf_entries(settings.conf)) {
    if (in_settings_fields(key) || key == "max_non_split_rounding_mb") continue;
    (without_effect(key, value) ? unmapped.without_effect : unmapped.not_modelled).push_back(key + ":" + value);
  }
  return unmapped;
}

ReplayCheck replay_check(const TorchRecording& recording, Bytes capacity) {
  if (recording.settings.expandable_segments) {
    throw Error("recorded with expandable_segments:True; replay-check rebuilds native segments only");
  }
  if (!recording.private_pools.empty()) {
    const PrivatePool& first = recording.private_pools.front();
    throw Error("private pool " + first.pool + " at " + first.entry +
                (recording.private_pools.size() > 1
                     ? " (and " + std::to_string(recording.private_pools.size() - 1) + " more)"
                     : std::string()) +
                ": a CUDA graph's or MemPool's segments, which replay-check does not keep apart yet");
  }
  ReplayCheck check;
  check.policy = caching_spec_for(recording.settings);
  UnmappedSettings unmapped = unmapped_settings(recording.settings);
  check.settings_not_modelled = std::move(unmapped.not_modelled);
  check.settings_without_effect = std::move(unmapped.without_effect);
  DeviceSpec spec;
  spec.capacity = capacity;
  SimDevice sim_device(spec);
  std::vector<RecordedAddressDevice::Placement> placements;
  for (const RecordedSegment& segment : recording.segments_at_start) placements.push_back({segment.addr, segment.size});
  for (const RecordedSegmentEvent& event : recording.segment_events) {
    if (event.action == Action::alloc) placements.push_back({event.addr, event.size});
  }
  RecordedAddressDevice placed(sim_device, std::move(placements));
  LoggingDevice device(placed);
  const Spec policy_spec = parse_spec(check.policy);
  CachingPolicy policy(Params(policy_spec, CachingPolicy::kParams, "policy caching"), device);
  const Trace& trace = recording.trace;
  policy.prepare(ReplaySetup{.allocations = trace.allocations() + recording.ooms.size()});
  const RoundupDivisions divisions = parse_roundup_divisions(divisions_list(recording.settings));

  // The start: every segment the recording began with, holding the blocks allocated
  // before it, at the same offsets.
  const std::size_t preexisting = recording.preexisting.size();
  if (preexisting > trace.events.size()) throw Error("the recording's pre-existing blocks outnumber its events");
  std::vector<std::size_t> order(preexisting);
  for (std::size_t i = 0; i < preexisting; ++i) order[i] = i;
  std::sort(order.begin(), order.end(),
            [&](std::size_t a, std::size_t b) { return recording.preexisting[a].addr < recording.preexisting[b].addr; });
  std::map<Addr, Addr> simulated_at;  // recorded segment address -> simulated
  std::size_t next = 0;
  Bytes start_reserved = 0;
  std::vector<Block> live(trace.allocations());
  for (const RecordedSegment& segment : recording.segments_at_start) {
    std::vector<CachingPolicy::HeldBlock> held;
    for (; next < preexisting && recording.preexisting[order[next]].addr < segment.addr + segment.size; ++next) {
      const PreexistingBlock& block = recording.preexisting[order[next]];
      if (block.addr < segment.addr) throw Error("the block at " + hex(block.addr) + " lies in no recorded segment");
      const Event& event = trace.events[order[next]];
      if (event.op != Op::alloc || trace.bytes_of(event.id) != block.requested) {
        throw Error("the trace's leading events do not match the recording's pre-existing blocks");
      }
      const bool last = next + 1 == preexisting ||
                        recording.preexisting[order[next + 1]].addr >= segment.addr + segment.size;
      const Addr end = last ? segment.addr + segment.size : recording.preexisting[order[next + 1]].addr;
      Bytes size = 0;
      if (block.block_size) {
        size = *block.block_size;
      } else {
        InferredSize inferred = inferred_block_size(block, end - block.addr, segment.small, divisions,
                                                    recording.settings.max_split_size);
        size = inferred.size;
        if (inferred.other) check.ambiguous_sizes.push_back(std::move(*inferred.other));
      }
      held.push_back({block.addr - segment.addr, size, event.id, block.requested});
    }
    const Addr addr = policy.adopt_segment(segment.size, segment.stream, segment.small, held);
    simulated_at[segment.addr] = addr;
    start_reserved += segment.size;
    for (const CachingPolicy::HeldBlock& block : held) {
      live[index_of(block.id)] = Block{addr + block.offset, block.size, block.requested, block.id, segment.stream};
    }
  }
  if (next < preexisting) {
    throw Error("the block at " + hex(recording.preexisting[order[next]].addr) + " lies in no recorded segment");
  }
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
      note(i, "trace event " + std::to_string(i) + ": PyTorch ran out of memory for " + sized(oom.size) + " with " +
                  sized(oom.device_free) + " free on the device; the replay served it at " + hex(block->addr));
      policy.deallocate(*block, now);
    }
  };
  check.recorded_ooms = recording.ooms.size();
  for (std::size_t i = preexisting; i < trace.events.size() && !stopped; ++i) {
    replay_ooms_before(i);
    const Event& event = trace.events[i];
    device.event = i;
    if (event.op == Op::alloc) {
      const auto block = policy.allocate(Request{event.id, trace.bytes_of(event.id), event.stream, event.time});
      if (!block) {
        stopped = "trace event " + std::to_string(i) + ": the simulated allocator ran out of memory at " +
                  format_bytes(trace.bytes_of(event.id)) + " on a " + format_bytes(capacity) + " device";
      } else {
        live[index_of(event.id)] = *block;
        const std::size_t id = index_of(event.id);
        check.addresses_compared += compare_addresses ? 1 : 0;
        if (compare_addresses && block->addr != recording.addresses[id]) {
          note(i, "trace event " + std::to_string(i) + ": alloc of " + sized(block->requested) + " at " +
                      hex(block->addr) + ", PyTorch placed it at " + hex(recording.addresses[id]));
        }
      }
    } else if (event.op == Op::free) {
      policy.deallocate(live[index_of(event.id)], event.time);
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
  const std::vector<CachingPolicy::SegmentLayout> layout = policy.layout();
  std::map<Addr, const CachingPolicy::SegmentLayout*> by_address;
  for (const auto& segment : layout) by_address[segment.addr] = &segment;
  for (const RecordedSegment& expected : recording.segments_at_end) {
    const auto mapped = simulated_at.find(expected.addr);
    const auto found = mapped == simulated_at.end() ? by_address.end() : by_address.find(mapped->second);
    const std::string where = "the snapshot's segment at " + hex(expected.addr) + " (" + format_bytes(expected.size) + ")";
    if (found == by_address.end()) {
      check.final_state = where + " is not held at the end of the replay";
      return check;
    }
    const CachingPolicy::SegmentLayout& got = *found->second;
    by_address.erase(found);
    for (std::size_t b = 0; b < std::max(expected.blocks.size(), got.blocks.size()); ++b) {
      if (b >= expected.blocks.size() || b >= got.blocks.size()) {
        check.final_state = where + " has " + std::to_string(expected.blocks.size()) + " blocks; the replay's has " +
                            std::to_string(got.blocks.size());
        return check;
      }
      const RecordedBlock& want = expected.blocks[b];
      const CachingPolicy::LaidBlock& have = got.blocks[b];
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
