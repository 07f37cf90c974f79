#include "studies/recording_start.hpp"

#include <algorithm>
#include <numeric>
#include <optional>
#include <sstream>

#include "sim/error.hpp"

namespace allocsim {
namespace {

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
    throw Error("the block at " + format_address(block.addr) + " (" + format_bytes(rounded) +
                ") does not fit before the next block of its segment");
  }
  const auto both = [&](Bytes chosen, const std::string& why, Bytes alternative, const std::string& other_why) {
    return InferredSize{chosen, "the block at " + format_address(block.addr) + " is " + std::to_string(chosen) + " B (" +
                                    why + ") or " + std::to_string(alternative) + " B (" + other_why +
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

// The pre-existing blocks' indices, by address; checks that the trace opens with them.
std::vector<std::size_t> preexisting_by_address(const TorchRecording& recording) {
  const std::size_t preexisting = recording.preexisting.size();
  const Trace& trace = recording.trace;
  if (preexisting > trace.events.size()) throw Error("the recording's pre-existing blocks outnumber its events");
  for (std::size_t i = 0; i < preexisting; ++i) {
    const Event& event = trace.events[i];
    if (event.op != Op::alloc || trace.bytes_of(event.id) != recording.preexisting[i].requested) {
      throw Error("the trace's leading events do not match the recording's pre-existing blocks");
    }
  }
  std::vector<std::size_t> order(preexisting);
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::sort(order.begin(), order.end(),
            [&](std::size_t a, std::size_t b) { return recording.preexisting[a].addr < recording.preexisting[b].addr; });
  return order;
}

}  // namespace

RecordedAddressDevice::Placements recorded_placements(const TorchRecording& recording) {
  RecordedAddressDevice::Placements placements;
  // An expandable segment at the start is reserved and mapped when it is adopted (its
  // range at its mapped prefix's address), so it comes first among the maps.
  for (const RecordedSegment& segment : recording.segments_at_start) {
    (segment.expandable ? placements.maps : placements.segments).push_back({segment.addr, segment.size});
  }
  for (const RecordedSegmentEvent& event : recording.segment_events) {
    if (event.action == RecordedSegmentEvent::Action::alloc) placements.segments.push_back({event.addr, event.size});
    if (event.action == RecordedSegmentEvent::Action::map) placements.maps.push_back({event.addr, event.size});
  }
  return placements;
}


RebuiltStart adopt_recorded_start(const TorchRecording& recording, RecordingAdoption& view, Policy& policy,
                                  const RoundupDivisions& divisions) {
  const Trace& trace = recording.trace;
  const std::vector<std::size_t> order = preexisting_by_address(recording);
  const std::size_t preexisting = order.size();
  RebuiltStart start;
  start.live.resize(trace.allocations());
  std::size_t next = 0;
  for (const RecordedSegment& segment : recording.segments_at_start) {
    std::vector<RecordingAdoption::HeldBlock> held;
    for (; next < preexisting && recording.preexisting[order[next]].addr < segment.addr + segment.size; ++next) {
      const PreexistingBlock& block = recording.preexisting[order[next]];
      if (block.addr < segment.addr) throw Error("the block at " + format_address(block.addr) + " lies in no recorded segment");
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
        if (inferred.other) start.ambiguous_sizes.push_back(std::move(*inferred.other));
      }
      held.push_back({block.addr - segment.addr, size, trace.events[order[next]].id, block.requested});
    }
    const auto adopt = [&] {
      return segment.expandable ? view.adopt_expandable_range(segment.size, segment.stream, segment.small, held)
                                : view.adopt_segment(segment.size, segment.stream, segment.small, held);
    };
    std::optional<Addr> addr = adopt();
    if (!addr) {
      policy.release_cached();  // PyTorch's OOM path: free the cached blocks, then retry
      addr = adopt();
    }
    for (const RecordingAdoption::HeldBlock& block : held) {
      start.live_bytes += block.size;
      if (!addr) start.unserved.push_back(block.id);
    }
    if (!addr) {
      if (held.empty()) {
        ++start.released_segments;
        start.released += segment.size;
      }
      continue;
    }
    start.simulated_at[segment.addr] = *addr;
    start.reserved += segment.size;
    for (const RecordingAdoption::HeldBlock& block : held) {
      start.live[index_of(block.id)] = Block{*addr + block.offset, block.size, block.requested, block.id, segment.stream};
    }
  }
  if (next < preexisting) {
    throw Error("the block at " + format_address(recording.preexisting[order[next]].addr) + " lies in no recorded segment");
  }
  return start;
}

RebuiltStart place_recorded_start(const TorchRecording& recording, Policy& policy) {
  const Trace& trace = recording.trace;
  RebuiltStart start;
  start.live.resize(trace.allocations());
  for (const std::size_t i : preexisting_by_address(recording)) {
    const Event& event = trace.events[i];
    const Allocation block = policy.allocate(Request{event.id, trace.bytes_of(event.id), event.stream, event.time});
    start.live_bytes += block ? block->size : trace.bytes_of(event.id);
    if (block) {
      start.live[index_of(event.id)] = *block;
    } else {
      start.unserved.push_back(event.id);
    }
  }
  return start;
}

}  // namespace allocsim
