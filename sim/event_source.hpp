// Where the engine's events come from: a window at a time, so that a replay needs memory
// for the live allocations only, never for the whole trace. An in-memory Trace, a
// memory-mapped .atrace file and the random generator are sources.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <vector>
#include <algorithm>

#include "sim/error.hpp"
#include "sim/trace.hpp"

namespace allocsim {

// The next events, and the requested bytes of each alloc among them. Either `bytes` runs
// beside `events` (bytes[i] belongs to events[i]) or `requested` is indexed by id (an
// in-memory trace hands out its own arrays: no copy).
struct EventWindow {
  std::span<const Event> events;
  const Bytes* bytes = nullptr;
  const Bytes* requested = nullptr;

  Bytes bytes_at(std::size_t i) const { return bytes ? bytes[i] : requested[index_of(events[i].id)]; }
};

// Contract:
// - events follow the Trace contract, except that ids are slots: a slot is used again
//   only after the free of the allocation that held it (an in-memory trace never reuses
//   one: its slots are its dense ids); slots() is how many there are, or, from a source
//   that cannot know before its end (a generator), a hint that ids may pass: state kept by
//   slot grows with grow_to_hold;
// - next() hands out consecutive windows until an empty one; a window stays valid until
//   the next call; errors in the input are allocsim::Error naming it and the position;
// - reopen() starts the same events again from the first (the engine walks them twice
//   only after the replay, for the live breakdown at the peak and at the first OOM).
class EventSource {
 public:
  virtual ~EventSource() = default;
  virtual EventWindow next() = 0;
  virtual std::size_t slots() const = 0;
  virtual std::uint64_t events() const = 0;
  virtual const TraceInfo& info() const = 0;
  // The workload's name, info().name; a trace still loading knows it before its info.
  virtual std::string_view name() const { return info().name; }
  // Max over time of the requested bytes alive; nullopt while unknown (a generator learns
  // it only at its end).
  virtual std::optional<Bytes> live_lower_bound() const = 0;
  // The whole trace when it is in memory (offline planners read it); nullptr when streamed.
  // A trace still loading (sim/background_trace.hpp) waits for its end here, as it does
  // for events(), info() and live_lower_bound(): a replay asks for them once it is done.
  virtual const Trace* trace() const { return nullptr; }
  virtual bool holds_trace() const { return false; }  // trace() is the whole trace, perhaps after a wait
  virtual std::unique_ptr<EventSource> reopen() const = 0;
};

// Makes `by_slot` long enough for index `slot`, doubling, so that growth stays O(1) amortised.
template <typename T>
void grow_to_hold(std::vector<T>& by_slot, std::uint32_t slot, const T& fill = T{}) {
  if (slot >= by_slot.size()) by_slot.resize(std::max<std::size_t>(slot + 1, by_slot.size() * 2), fill);
}

// Makes a fresh source; a tenant holds one instead of a Trace to replay streamed.
class EventSourceFactory {
 public:
  virtual ~EventSourceFactory() = default;
  virtual std::unique_ptr<EventSource> open() const = 0;
};

// An in-memory trace as a source: one window, the trace's own arrays.
class TraceSource final : public EventSource {
 public:
  explicit TraceSource(std::shared_ptr<const Trace> trace) : trace_(std::move(trace)) {}
  EventWindow next() override;
  std::size_t slots() const override { return trace_->allocations(); }
  std::uint64_t events() const override { return trace_->events.size(); }
  const TraceInfo& info() const override { return trace_->info; }
  std::optional<Bytes> live_lower_bound() const override { return trace_->live_lower_bound; }
  const Trace* trace() const override { return trace_.get(); }
  bool holds_trace() const override { return true; }
  std::unique_ptr<EventSource> reopen() const override { return std::make_unique<TraceSource>(trace_); }

 private:
  std::shared_ptr<const Trace> trace_;
  bool done_ = false;
};

// Calls `visit(event, bytes)` for every event of a fresh pass over `source`, bytes being
// the requested bytes of the allocation an alloc or free names; stops when visit returns
// false. For the walks after a replay (lower bounds, the breakdown at the peak).
template <typename Visit>
void walk_events(const EventSource& source, Visit visit) {
  const std::unique_ptr<EventSource> pass = source.reopen();
  std::vector<Bytes> bytes_by_slot(pass->slots(), 0);
  for (EventWindow window = pass->next(); !window.events.empty(); window = pass->next()) {
    for (std::size_t i = 0; i < window.events.size(); ++i) {
      const Event& event = window.events[i];
      Bytes bytes = 0;
      if (event.op == Op::alloc) {
        grow_to_hold(bytes_by_slot, index_of(event.id));
        bytes = bytes_by_slot[index_of(event.id)] = window.bytes_at(i);
      } else if (event.op == Op::free) {
        bytes = bytes_by_slot[index_of(event.id)];
      }
      if (!visit(event, bytes)) return;
    }
  }
}

// The most bytes alive at once over the whole trace, each request sized by `rounded`
// (identity: the live lower bound; a policy's rounding: what no placement of it can go below).
template <typename Round>
Bytes peak_live(const EventSource& source, Round rounded) {
  Bytes live = 0;
  Bytes peak = 0;
  walk_events(source, [&](const Event& event, Bytes bytes) {
    if (event.op == Op::alloc) {
      live += rounded(bytes);
      peak = std::max(peak, live);
    } else if (event.op == Op::free) {
      live -= rounded(bytes);
    }
    return true;
  });
  return peak;
}

// What a reader adds while materialise builds its trace from its source.
struct MaterialiseHooks {
  // The layer of the allocation-th alloc (0, 1, ... in event order); empty: no layers.
  std::function<std::string_view(std::size_t allocation)> layer;
  // An event the trace refuses (the TraceBuilder's Error), `event` its index in the source:
  // throws an Error that says where in the input it is. Empty: the Error as it is.
  std::function<void(std::uint64_t event, const Error& error)> failed;
  // A load in the background: told of the events built as they come (TraceBuilder::report_to).
  TraceProgress* progress = nullptr;
  // Checks on the whole trace, made before its builder lets it go (after that nothing may
  // throw while a background load's replay reads its arrays); throws Error.
  std::function<void(const TraceBuilder& built)> check_whole;
};

// Reads a whole source into a Trace (ids renumbered dense again): what a policy that plans
// over the whole trace needs, and what a reader of a streamed format gives the catalogue.
Trace materialise(EventSource& source, const MaterialiseHooks& hooks = {});

}  // namespace allocsim
