// One tenant's replay: its state, and the event loop written once as a template over the
// policy's type. The engine (sim/engine.cpp) runs the loop with P = Policy (a virtual call
// per request) when it checks, observes or merges tenants. A plain run (one tenant, no
// checks, no observers) runs it through the tenant's DirectLoop when its factory gave one
// (sim/direct_loop.hpp): there P is the policy's final type, so allocate and deallocate are
// direct calls the compiler may inline, and the dispatch is once per run.
#pragma once

#include <algorithm>
#include <cstddef>
#include <limits>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "sim/event_source.hpp"
#include "sim/interrupt.hpp"
#include "sim/made_policy.hpp"
#include "sim/metered_device.hpp"
#include "sim/observer.hpp"
#include "sim/policy.hpp"
#include "sim/result.hpp"
#include "sim/slot_numbers.hpp"

namespace allocsim {

struct TenantSpec;  // sim/engine.hpp

inline constexpr Bytes kNotLive = std::numeric_limits<Bytes>::max();
// No slot: slot_of of an allocation dropped at an OOM (its free is skipped too).
inline constexpr std::uint32_t kNoSlot = std::numeric_limits<std::uint32_t>::max();

// What the engine keeps of one live allocation: all a free needs, and what the tenant's end
// hands back, in 32 bytes.
struct LiveBlock {
  Addr addr = 0;
  Bytes size = kNotLive;  // kNotLive: the slot is free
  Bytes requested = 0;
  AllocId id{};
  Stream stream = 0;
};
static_assert(sizeof(LiveBlock) == 32);

class TenantState;

// What the loop leaves to the engine: what rarely happens (an OOM, a hang, a clock past
// its end) and what only checks and observers need.
class ReplayHooks {
 public:
  // An OOM, or (hang not empty) a request the real allocator would never have returned from.
  virtual void not_served(TenantState& run, std::size_t tenant, std::size_t index, Bytes bytes, Nanos now,
                          std::string_view hang) = 0;
  [[noreturn]] virtual void clock_wraps(const TenantState& run, std::size_t index, const Event& event) const = 0;
  virtual void check(TenantState& run, std::size_t index) = 0;  // --check, after every event
  [[noreturn]] virtual void fail(const TenantState& run, std::size_t index, const std::string& what) const = 0;
  virtual void sample(const TenantState& run, std::size_t tenant, std::size_t index, Nanos time) = 0;  // observers

 protected:
  ~ReplayHooks() = default;
};

class Replay;  // sim/engine.cpp: the engine, the one reader and writer of a tenant's state

// One tenant's state, private to the engine (Replay) and its plain loop (PlainReplay).
class TenantState final : public MoveListener, public DeviceCallListener {
 public:
  TenantState(const TenantSpec& tenant_spec, Device& shared_device, Bytes& peak_used);

  // A policy relocated a live block: remember where it is now, to hand it back there.
  void moved(const Move& move) override;
  // Observers hear of blocks and device calls with the tenant's current request.
  void device_call(SegmentAction action, Addr addr, Bytes bytes) override;

 private:
  friend class Replay;
  friend class PlainReplay;

  void tell_block(BlockAction action, AllocId id, Addr addr, Bytes size, Stream block_stream, Addr from = 0);
  void serving(Nanos time, std::size_t event, Stream event_stream) {
    now = time;
    at_event = event;
    stream = event_stream;
  }

  // Whether an event is left in the window, fetching the next window when this one is done.
  bool has_event() {
    if (at < window.events.size()) return true;
    if (exhausted) return false;
    window_first += window.events.size();
    window = source->next();
    at = 0;
    exhausted = window.events.empty();
    return !exhausted;
  }
  // A tenant starts (its context, then its policy) at spec.start, before its first event.
  bool finished() { return started && (policy == nullptr || !has_event()); }
  Nanos next_time() { return started && has_event() ? window.events[at].time + offset : start; }
  Nanos delay() const { return offset - start; }  // allocator time so far
  std::size_t replayed() const { return window_first + at; }  // events

  // The events of this started tenant while it has them and its policy lives.
  template <typename P, bool kCheck, bool kObserve>
  void replay_while_alive(P& policy, ReplayHooks& hooks) {
    // A stop (OOM, hang) destroys the policy inside the loop: test before touching it again.
    while (this->policy && has_event()) {
      Cursor cursor = cursor_here();
      const std::size_t end = std::min(cursor.window.events.size(), cursor.at + kEventsBetweenStopChecks);
      do {
        replay_event<P, kCheck, kObserve>(policy, hooks, 0, cursor);
      } while (cursor.at < end && this->policy);
      stop_if_interrupted();
    }
  }

  // Where the loop is in the window, kept in registers while the window lasts. The members
  // (at, offset) are written through at every event, so hooks, errors and the engine read
  // them right, but never read back: a policy's stores may alias them, so the loop had to
  // reload both after every event, on its critical path.
  struct Cursor {
    EventWindow window;
    std::size_t at;     // in the window
    std::size_t first;  // window_first
    Nanos offset;
    std::size_t ids;  // slot_of.size(), which changes only in grow_ids
  };
  Cursor cursor_here() const { return Cursor{window, at, window_first, offset, slot_of.size()}; }

  // One event of a started tenant whose window holds one; `policy` is *this->policy. The
  // per-event path is forced inline, and new_peak kept out of it: tools/bench_ab showed the
  // gain on the fastest policies (docs/bench.md).
  template <typename P, bool kCheck, bool kObserve>
  [[gnu::always_inline]] void replay_event(P& policy, ReplayHooks& hooks, std::size_t tenant, Cursor& cursor);
  template <typename P, bool kCheck, bool kObserve>
  void replay_event(P& policy, ReplayHooks& hooks, std::size_t tenant) {
    Cursor cursor = cursor_here();
    replay_event<P, kCheck, kObserve>(policy, hooks, tenant, cursor);
  }

  const TenantSpec& spec;
  Nanos start;  // spec.start
  // What every later event's trace time is shifted by: the start, and the allocator time so
  // far. One sum, so that an event's clock is one add (and one overflow test).
  Nanos offset;
  std::unique_ptr<EventSource> source;
  EventWindow window;
  std::size_t at = 0;  // in window
  std::size_t window_first = 0;  // the index of the window's first event in the source
  bool exhausted = false;
  MeteredDevice device;
  std::unique_ptr<Policy> policy;
  DirectLoop loop = nullptr;  // the plain loop with the policy's own type, if its factory gave one
  bool started = false;
  bool context_open = false;
  Bytes needs = 0;  // the policy's rounded peak_live, computed at the first OOM
  // The live allocations in slots reused after a free, so that they take the memory of the
  // live set, not of every allocation of the trace (an in-memory trace's ids are dense):
  // slot_of maps an id of the source to its slot, 4 bytes an id.
  std::vector<std::uint32_t> slot_of;  // by the source's id; kNoSlot: dropped at an OOM
  std::vector<LiveBlock> live;         // by slot
  SlotNumbers slots;                   // which of live's slots are free
  Bytes allocated = 0;
  Bytes requested = 0;
  std::vector<std::size_t> skipped;  // events of the allocations dropped at an OOM (--on-oom continue), in order
  TenantResult result;
  std::size_t index = 0;  // in the scenario
  std::span<Observer* const> observers;
  Nanos now = 0;              // of the request being served, for observers
  std::size_t at_event = 0;
  Stream stream = 0;

  template <typename P, bool kCheck, bool kObserve>
  [[gnu::always_inline]] void allocate(P& policy, ReplayHooks& hooks, std::size_t tenant, std::size_t index,
                                       const Event& event, Bytes bytes, Nanos now, Cursor& cursor);
  template <typename P, bool kObserve>
  [[gnu::always_inline]] void deallocate(P& policy, const Event& event, Nanos now);
  template <typename P>
  [[gnu::noinline]] void new_peak(P& policy, std::size_t index);
  void grow_ids(std::uint32_t id);  // a generator's ids passed its hint
  std::uint32_t take_slot() {
    const std::uint32_t slot = slots.take();
    if (slot == live.size()) [[unlikely]] live.emplace_back();
    return slot;
  }
};

// The plain loop of one tenant, handed to its DirectLoop, which runs it with the policy's
// own type: replay.run(policy).
class PlainReplay {
 public:
  PlainReplay(TenantState& run, ReplayHooks& hooks) : run_(run), hooks_(hooks) {}
  template <typename P>
  void run(P& policy) const {
    run_.replay_while_alive<P, false, false>(policy, hooks_);
  }

 private:
  TenantState& run_;
  ReplayHooks& hooks_;
};

template <typename P, bool kCheck, bool kObserve>
inline void TenantState::replay_event(P& policy, ReplayHooks& hooks, std::size_t tenant, Cursor& cursor) {
  const std::size_t at_window = cursor.at++;
  at = cursor.at;
  const std::size_t event_index = cursor.first + at_window;
  const Event& event = cursor.window.events[at_window];
  Nanos event_now = 0;
  if (__builtin_add_overflow(event.time, cursor.offset, &event_now)) [[unlikely]] {
    hooks.clock_wraps(*this, event_index, event);
  }
  const Nanos spent_before = device.time_spent();
  if constexpr (kObserve) serving(event_now, event_index, event.stream);
  switch (event.op) {
    case Op::alloc:
      allocate<P, kCheck, kObserve>(policy, hooks, tenant, event_index, event, cursor.window.bytes_at(at_window),
                                      event_now, cursor);
      break;
    case Op::free:
      deallocate<P, kObserve>(policy, event, event_now);
      break;
    case Op::release:
      policy.release_cached();
      break;
    case Op::sync:
      policy.synchronize(sync_of(event), event_now);
      break;
  }
  const Nanos cost = device.time_spent() - spent_before;
  if (__builtin_add_overflow(event_now, cost, &result.end_time)) [[unlikely]] hooks.clock_wraps(*this, event_index, event);
  cursor.offset += cost;  // cannot wrap: event_now + cost did not
  offset = cursor.offset;
  if (!this->policy) return;  // stopped by an OOM
  // The peak of reserved bytes after an event: it can rise only after an event that took memory.
  if (device.grew()) {
    result.peak_reserved = std::max(result.peak_reserved, device.reserved());
    device.forget_growth();
  }
  if constexpr (kCheck) hooks.check(*this, event_index);
  if constexpr (kObserve) hooks.sample(*this, tenant, event_index, event_now + cost);
}

template <typename P, bool kCheck, bool kObserve>
inline void TenantState::allocate(P& policy, ReplayHooks& hooks, std::size_t tenant, std::size_t event_index,
                            const Event& event, Bytes bytes, Nanos event_now, Cursor& cursor) {
  const std::uint32_t id = index_of(event.id);
  if (id >= cursor.ids) [[unlikely]] {
    grow_ids(id);
    cursor.ids = slot_of.size();
  }
  const Allocation block = policy.allocate(Request{event.id, bytes, event.stream, event_now});
  if (!block) [[unlikely]] {
    slot_of[id] = kNoSlot;
    hooks.not_served(*this, tenant, event_index, bytes, event_now, block.hang);
    return;
  }
  if (kCheck && (block->addr % kBlockAlignment != 0 || block->size < bytes || block->id != event.id)) {
    hooks.fail(*this, event_index, "block at " + std::to_string(block->addr) + " of " + std::to_string(block->size) +
                                       " bytes for a request of " + std::to_string(bytes) + " bytes");
  }
  const std::uint32_t slot = take_slot();
  slot_of[id] = slot;
  live[slot] = LiveBlock{block->addr, block->size, bytes, event.id, event.stream};
  if constexpr (kObserve) tell_block(BlockAction::placed, event.id, block->addr, block->size, event.stream);
  allocated += block->size;
  requested += bytes;
  if (requested > result.peak_requested) result.peak_requested = requested;
  if (allocated > result.peak_allocated) [[unlikely]] new_peak(policy, event_index);
}

template <typename P, bool kObserve>
inline void TenantState::deallocate(P& policy, const Event& event, Nanos event_now) {
  const std::uint32_t slot = slot_of[index_of(event.id)];
  if (slot == kNoSlot) return;  // its allocation failed and was skipped
  LiveBlock& block = live[slot];
  const Bytes bytes = block.requested;
  if constexpr (kObserve) tell_block(BlockAction::freed, event.id, block.addr, block.size, event.stream);
  policy.deallocate(Block{block.addr, block.size, bytes, event.id, event.stream}, event_now);
  allocated -= block.size;
  requested -= bytes;
  block.size = kNotLive;
  slots.give_back(slot);
}

template <typename P>
void TenantState::new_peak(P& policy, std::size_t event_index) {
  result.peak_allocated = allocated;
  result.peak_event = event_index;
  result.reserved_at_peak = device.reserved();
  const PolicyStats stats = policy.stats();
  result.largest_free_at_peak = stats.largest_free;
  result.never_touched_at_peak = stats.never_touched;
}

}  // namespace allocsim
