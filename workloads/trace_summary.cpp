#include "workloads/trace_summary.hpp"

#include <algorithm>

namespace allocsim {

TraceSummary summarize(const Trace& trace) {
  TraceSummary summary;
  summary.events = trace.events.size();
  summary.allocations = trace.allocations();
  summary.steps = trace.info.step_starts.size();
  summary.layers = trace.layer_names.size();
  if (!trace.events.empty()) {
    summary.first_time = trace.events.front().time;
    summary.last_time = trace.events.back().time;
  }
  Bytes live = 0;
  for (std::size_t index = 0; index < trace.events.size(); ++index) {
    const Event& event = trace.events[index];
    switch (event.op) {
      case Op::alloc: {
        const Bytes bytes = trace.bytes_of(event.id);
        live += bytes;
        summary.largest_allocation = std::max(summary.largest_allocation, bytes);
        RequestCount& stream = summary.streams[event.stream];
        RequestCount& tag = summary.tags[static_cast<std::size_t>(event.tag)];
        ++stream.allocations;
        stream.bytes += bytes;
        ++tag.allocations;
        tag.bytes += bytes;
        if (live > summary.live_lower_bound) {
          summary.live_lower_bound = live;
          summary.lower_bound_event = index;
        }
        break;
      }
      case Op::free:
        live -= trace.bytes_of(event.id);
        ++summary.frees;
        break;
      case Op::release:
        ++summary.releases;
        break;
      case Op::sync:
        ++summary.syncs;
        break;
    }
  }
  summary.live_at_end = summary.allocations - summary.frees;
  summary.live_bytes_at_end = live;
  return summary;
}

}  // namespace allocsim
