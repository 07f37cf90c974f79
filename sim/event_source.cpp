#include "sim/event_source.hpp"

#include <limits>
#include <vector>

#include "sim/error.hpp"
#include "sim/interrupt.hpp"

namespace allocsim {

EventWindow TraceSource::next() {
  if (done_) return {};
  done_ = true;
  return EventWindow{trace_->events, nullptr, trace_->requested.data()};
}

Trace materialise(EventSource& source, const MaterialiseHooks& hooks) {
  const TraceInfo& info = source.info();
  TraceBuilder builder(TraceInfo{info.name, info.source});
  if (hooks.progress) {
    builder.report_to(*hooks.progress, source.events(), source.events());
  } else {
    builder.reserve(source.events());
  }
  constexpr auto kFree = std::numeric_limits<std::uint32_t>::max();
  std::vector<std::uint32_t> id_of_slot(source.slots(), kFree);
  auto step = info.step_starts.begin();
  std::uint64_t index = 0;
  std::size_t allocation = 0;
  for (EventWindow window = source.next(); !window.events.empty(); window = source.next()) {
    stop_if_interrupted();  // a generator's long trace, as a long replay (sim/interrupt.hpp)
    for (std::size_t i = 0; i < window.events.size(); ++i, ++index) {
      const Event& event = window.events[i];
      if (step != info.step_starts.end() && *step == index) {
        builder.begin_step();
        ++step;
      }
      try {
        switch (event.op) {
          case Op::alloc: {
            const Bytes bytes = window.bytes_at(i);
            const AllocId id = hooks.layer ? builder.alloc(event.time, bytes, event.stream, event.tag, hooks.layer(allocation))
                                           : builder.alloc(event.time, bytes, event.stream, event.tag);
            grow_to_hold(id_of_slot, index_of(event.id), kFree);
            id_of_slot[index_of(event.id)] = index_of(id);
            ++allocation;
            break;
          }
          case Op::free:
            builder.free(event.time, static_cast<AllocId>(id_of_slot[index_of(event.id)]));
            break;
          case Op::release:
            builder.release(event.time);
            break;
          case Op::sync:
            builder.sync(event.time, sync_of(event));
            break;
        }
      } catch (const Error& error) {
        if (!hooks.failed) throw;
        hooks.failed(index, error);
        throw;  // a hook that did not throw: the Error as it is
      }
    }
  }
  if (hooks.check_whole) hooks.check_whole(builder);
  return std::move(builder).finish();
}

}  // namespace allocsim
