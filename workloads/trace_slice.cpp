#include "workloads/trace_slice.hpp"

#include <algorithm>
#include <string>
#include <vector>

#include "sim/error.hpp"
#include "sim/units.hpp"

namespace allocsim {
namespace {

// The [first, end) event indices of a range.
std::pair<std::size_t, std::size_t> event_range(const Trace& trace, const SliceRange& range) {
  const std::size_t size = trace.events.size();
  if (range.by == SliceRange::By::events) {
    const std::size_t first = std::min<std::uint64_t>(range.begin.value_or(0), size);
    const std::size_t end = std::min<std::uint64_t>(range.end.value_or(size), size);
    if (first >= end) {
      throw Error("--events " + std::to_string(range.begin.value_or(0)) + ":" +
                  (range.end ? std::to_string(*range.end) : "") + " holds no event (the trace has " +
                  std::to_string(size) + ", numbered from 0)");
    }
    return {first, end};
  }
  const auto at_or_after = [&](Nanos time) {
    return static_cast<std::size_t>(std::lower_bound(trace.events.begin(), trace.events.end(), time,
                                                     [](const Event& event, Nanos t) { return event.time < t; }) -
                                    trace.events.begin());
  };
  const std::size_t first = range.begin ? at_or_after(*range.begin) : 0;
  const std::size_t end = range.end ? at_or_after(*range.end) : size;
  if (first >= end) {
    const Nanos last = trace.events.empty() ? 0 : trace.events.back().time;
    throw Error("--time " + (range.begin ? format_nanos(*range.begin) : std::string()) + ":" +
                (range.end ? format_nanos(*range.end) : std::string()) + " holds no event (the trace's events are at " +
                format_nanos(trace.events.empty() ? 0 : trace.events.front().time) + " to " + format_nanos(last) + ")");
  }
  return {first, end};
}

}  // namespace

TraceSlice slice_trace(const Trace& trace, const SliceRange& range) {
  const auto [first, end] = event_range(trace, range);
  const Nanos origin = range.by == SliceRange::By::time && range.begin ? *range.begin : trace.events[first].time;
  const bool has_layers = !trace.layer.empty();
  TraceInfo info = trace.info;
  info.step_starts.clear();
  TraceBuilder builder(info);
  std::vector<std::optional<AllocId>> renamed(trace.allocations());
  const auto alloc = [&](Nanos time, const Event& event) {
    const Bytes bytes = trace.bytes_of(event.id);
    renamed[index_of(event.id)] =
        has_layers ? builder.alloc(time, bytes, event.stream, event.tag, trace.layer_names[trace.layer[index_of(event.id)]])
                   : builder.alloc(time, bytes, event.stream, event.tag);
  };

  // What is alive at the cut: its allocation events, in the order they were made.
  std::vector<std::size_t> allocated_at(trace.allocations(), 0);
  std::vector<bool> live(trace.allocations(), false);
  for (std::size_t index = 0; index < first; ++index) {
    const Event& event = trace.events[index];
    if (event.op == Op::alloc) {
      live[index_of(event.id)] = true;
      allocated_at[index_of(event.id)] = index;
    } else if (event.op == Op::free) {
      live[index_of(event.id)] = false;
    }
  }
  TraceSlice slice;
  slice.first_event = first;
  slice.end_event = end;
  builder.reserve(end - first + static_cast<std::size_t>(std::count(live.begin(), live.end(), true)));
  if (!trace.info.step_starts.empty()) builder.begin_step();
  for (std::uint32_t id = 0; id < trace.allocations(); ++id) {
    if (!live[id]) continue;
    alloc(0, trace.events[allocated_at[id]]);
    ++slice.carried_in;
  }

  auto next_step = std::upper_bound(trace.info.step_starts.begin(), trace.info.step_starts.end(), first);
  for (std::size_t index = first; index < end; ++index) {
    if (next_step != trace.info.step_starts.end() && *next_step == index) {
      builder.begin_step();
      ++next_step;
    }
    const Event& event = trace.events[index];
    const Nanos time = event.time - origin;
    switch (event.op) {
      case Op::alloc:
        alloc(time, event);
        live[index_of(event.id)] = true;
        break;
      case Op::free:
        builder.free(time, *renamed[index_of(event.id)]);
        live[index_of(event.id)] = false;
        break;
      case Op::release:
        builder.release(time);
        break;
      case Op::sync:
        builder.sync(time, sync_of(event));
        break;
    }
  }
  for (std::size_t index = end; index < trace.events.size(); ++index) {
    const Event& event = trace.events[index];
    if (event.op == Op::free && live[index_of(event.id)]) ++slice.frees_dropped;
  }
  slice.trace = std::move(builder).finish();
  return slice;
}

}  // namespace allocsim
