#include "sim/engine.hpp"

#include <algorithm>
#include <chrono>
#include <deque>
#include <limits>

#include "sim/breakdown.hpp"
#include "sim/error.hpp"
#include "sim/metered_device.hpp"
#include "sim/sim_device.hpp"
#include "sim/tenant_replay.hpp"

namespace allocsim {
namespace {

// live_breakdown for a streamed trace: by tag only (a stream carries no layers), the
// allocations skipped at an OOM (`skipped`: their event indices, ascending) left out.
Breakdown streamed_breakdown(const EventSource& source, std::size_t peak_event, std::span<const std::size_t> skipped) {
  Breakdown result;
  result.event = peak_event;
  std::vector<bool> skipped_slot(source.slots(), false);
  std::size_t index = 0;
  auto next_skip = skipped.begin();
  walk_events(source, [&](const Event& event, Bytes bytes) {
    if (index > peak_event) return false;
    const bool skip_here = next_skip != skipped.end() && *next_skip == index;
    if (skip_here) ++next_skip;
    ++index;
    if (!names_allocation(event.op)) return true;
    const std::uint32_t slot = index_of(event.id);
    if (event.op == Op::alloc) {
      if (slot >= skipped_slot.size()) skipped_slot.resize(std::max<std::size_t>(slot + 1, skipped_slot.size() * 2));
      skipped_slot[slot] = skip_here;
    }
    if (skipped_slot[slot]) return true;
    Bytes& by_tag = result.by_tag[static_cast<std::size_t>(event.tag)];
    by_tag = event.op == Op::alloc ? by_tag + bytes : by_tag - bytes;
    return true;
  });
  return result;
}

std::unique_ptr<EventSource> open_source(const TenantSpec& spec) {
  if (spec.trace) return std::make_unique<TraceSource>(spec.trace);
  if (spec.source) return spec.source->open();
  throw Error("tenant without a trace");
}

}  // namespace

// The engine: every tenant's replay, merged in time order.
class Replay final : ReplayHooks {
 public:
  Replay(Device& device, const Scenario& scenario, std::span<Observer* const> observers)
      : device_(device), scenario_(scenario), observers_(observers),
        baseline_used_(device.used()),
        peak_used_(baseline_used_) {
    for (const TenantSpec& spec : scenario.tenants) {
      TenantState& run = tenants_.emplace_back(spec, device_, peak_used_);
      run.result.index = tenants_.size() - 1;
      run.index = run.result.index;
      run.observers = observers_;
      if (!observers_.empty()) run.device.listen(&run);
      run.result.workload = run.source->name();
      run.result.policy = spec.policy.text;
    }
  }

  RunResult run() {
    const auto wall_start = std::chrono::steady_clock::now();
    if (tenants_.size() == 1) {
      replay_alone();  // no merging to do
    } else {
      std::size_t steps = 0;
      for (std::size_t tenant = next_tenant(); tenant < tenants_.size(); tenant = next_tenant()) {
        step(tenant);
        if (++steps % kEventsBetweenStopChecks == 0) stop_if_interrupted();
      }
    }
    for (TenantState& run : tenants_) {
      if (run.policy) finish(run);
    }
    const std::chrono::duration<double> wall = std::chrono::steady_clock::now() - wall_start;
    // Only now what a trace still loading knows at its end.
    for (TenantState& run : tenants_) {
      const EventSource& source = *run.source;
      const TraceInfo& info = source.info();
      run.result.events = source.events();
      if (run.result.peak_allocated > 0) {
        if (const Trace* trace = source.trace()) {
          std::vector<AllocId> skipped;
          for (const std::size_t event : run.skipped) skipped.push_back(trace->events[event].id);
          run.result.at_peak = live_breakdown(*trace, run.result.peak_event, skipped);
        } else {
          run.result.at_peak = streamed_breakdown(source, run.result.peak_event, run.skipped);
        }
        run.result.peak_step = step_of(info, run.result.peak_event);
      }
      run.result.steps = info.step_starts.size();
      run.result.generation = info.generation;
      if (!source.live_lower_bound()) {  // a generator stopped early: walk it once more
        run.result.live_lower_bound = peak_live(source, [](Bytes bytes) { return bytes; });
      } else {
        run.result.live_lower_bound = *source.live_lower_bound();
      }
    }
    if (scenario_.check && device_.used() != baseline_used_) {
      throw Error("check: " + format_bytes(device_.used() - baseline_used_) +
                  " still held on the device after every policy was destroyed");
    }
    RunResult result;
    result.device = scenario_.device;
    result.before_start = baseline_used_;
    result.peak_device = peak_used_;
    result.replay_seconds = wall.count();
    for (TenantState& run : tenants_) {
      result.events_replayed += run.result.events_replayed;
      result.tenants.push_back(std::move(run.result));
    }
    return result;
  }

 private:
  // One tenant: a loop made for what this scenario watches, the rest compiled out. The
  // plain one runs with the policy's own type where its factory gave a DirectLoop.
  void replay_alone() {
    TenantState& run = tenants_.front();
    start(run, 0);
    if (!run.policy) return;
    const bool observe = !observers_.empty();
    if (scenario_.check) {
      observe ? run.replay_while_alive<Policy, true, true>(*run.policy, *this)
              : run.replay_while_alive<Policy, true, false>(*run.policy, *this);
    } else if (observe) {
      run.replay_while_alive<Policy, false, true>(*run.policy, *this);
    } else if (run.loop) {
      run.loop(*run.policy, PlainReplay(run, *this));
    } else {
      run.replay_while_alive<Policy, false, false>(*run.policy, *this);
    }
  }

  std::size_t next_tenant() {
    std::size_t best = tenants_.size();
    Nanos best_time = 0;
    for (std::size_t t = 0; t < tenants_.size(); ++t) {
      if (tenants_[t].finished()) continue;
      const Nanos time = tenants_[t].next_time();
      if (best == tenants_.size() || time < best_time) {
        best = t;
        best_time = time;
      }
    }
    return best;
  }

  // A process starts: the driver creates its CUDA context, then the framework its
  // allocator, which sees what the device has free now (TensorFlow sizes its pool by it).
  void start(TenantState& run, std::size_t tenant) {
    run.started = true;
    run.serving(run.spec.start, 0, 0);
    run.context_open = device_.open_context();
    peak_used_ = std::max(peak_used_, device_.used());
    if (run.context_open) contexts_ += scenario_.device.context_overhead;
    run.result.context = run.context_open ? scenario_.device.context_overhead : 0;
    MadePolicy made = run.spec.policy.make(run.device);
    run.policy = std::move(made.policy);
    run.loop = made.loop;
    const EventSource& source = *run.source;
    run.policy->prepare(ReplaySetup{source.slots(), [&source] { return source.trace(); }, &run, !source.holds_trace()});
    if (!run.context_open) out_of_memory(run, tenant, 0, scenario_.device.context_overhead, run.spec.start);
  }

  void step(std::size_t tenant) {
    TenantState& run = tenants_[tenant];
    if (!run.started) return start(run, tenant);
    Policy& policy = *run.policy;
    const bool observe = !observers_.empty();
    if (scenario_.check) {
      observe ? run.replay_event<Policy, true, true>(policy, *this, tenant)
              : run.replay_event<Policy, true, false>(policy, *this, tenant);
    } else {
      observe ? run.replay_event<Policy, false, true>(policy, *this, tenant)
              : run.replay_event<Policy, false, false>(policy, *this, tenant);
    }
  }

  // The simulated clock is the trace's time plus the allocator time spent before: it must
  // stay under 2^64 ns, or later events would seem to come first.
  [[noreturn]] void clock_wraps(const TenantState& run, std::size_t index, const Event& event) const override {
    throw Error(run.result.workload + ": event " + std::to_string(index) + " at time_ns " + std::to_string(event.time) +
                ", plus " + format_nanos(run.delay()) + " of allocator time before it" +
                (run.spec.start ? " and its start " + format_nanos(run.spec.start) : std::string()) +
                ", passes the simulated clock's end (2^64 ns); make the trace's times smaller");
  }

  void not_served(TenantState& run, std::size_t tenant, std::size_t index, Bytes bytes, Nanos now,
                  std::string_view hang) override {
    if (!hang.empty()) {
      run.result.hang_event = index;
      run.result.hang_reason = std::string(hang);
      finish(run);  // the program would never have come back from this request
      return;
    }
    out_of_memory(run, tenant, index, bytes, now);
  }

  // The requested bytes alive in every tenant (what an OOM's context reports).
  Bytes live_requested() const {
    Bytes bytes = 0;
    for (const TenantState& run : tenants_) bytes += run.requested;
    return bytes;
  }

  // What the device gives `run` now, and who holds the rest.
  TenantShare share_of(const TenantState& run) const {
    TenantShare share{device_.capacity(), baseline_used_, contexts_, {}};
    for (const TenantState& other : tenants_) {
      if (&other == &run || !other.policy) continue;
      share.others.push_back(TenantHolding{other.result.index, other.device.reserved(), other.requested});
    }
    return share;
  }

  void out_of_memory(TenantState& run, std::size_t tenant, std::size_t index, Bytes bytes, Nanos now) {
    const bool first = run.result.oom_count == 0;
    PolicyInspection inspection = run.policy->inspect(first ? Detail::full : Detail::counters);
    if (first) {
      const Policy& policy = *run.policy;
      run.needs = peak_live(*run.source, [&](Bytes bytes) { return policy.rounded_size(bytes); });
      run.result.needs = run.needs;
      run.result.planned_reserve = inspection.planned_reserve;
    }
    TenantShare share = share_of(run);
    const Bytes usable = share.capacity - std::min(share.capacity, share.before_start + share.contexts);
    OomContext context{bytes,    live_requested(),    run.requested,           usable, device_.available(),
                       run.policy->stats(), inspection.releasable, run.needs, std::move(share)};
    TenantResult& result = run.result;
    const OomKind kind = classify_over_run(context);
    const OomKind request_kind = classify_oom(context);
    OomRecord record{tenant, index, step_of(run.source->info(), index), now, bytes, kind, request_kind, !run.context_open,
                     std::move(context), first ? std::move(inspection.state) : std::string()};
    ++result.oom_count;
    ++result.ooms_by_request_kind[static_cast<std::size_t>(record.request_kind)];
    for (Observer* observer : observers_) observer->on_oom(record);
    if (result.ooms.size() < kMaxOomRecords) result.ooms.push_back(std::move(record));
    if (scenario_.on_oom == OnOom::stop || !run.context_open) {
      finish(run);
    } else {
      run.skipped.push_back(index);
    }
  }

  // Records the tenant's results, then ends it as a process exit would: every live block
  // freed, the cache emptied, the policy destroyed and its segments returned.
  void finish(TenantState& run) {
    TenantResult& result = run.result;
    result.events_replayed = run.replayed();
    result.allocator_time = run.device.time_spent();
    result.device_mallocs = run.device.mallocs();
    result.device_frees = run.device.frees();
    result.device_failed_mallocs = run.device.failed_mallocs();
    result.bytes_moved = run.device.bytes_moved();
    result.extra = run.policy->inspect(Detail::counters).extra;
    run.serving(result.end_time, run.replayed(), 0);
    for (Observer* observer : observers_) observer->on_exit(run.index, result.end_time);
    // In the order of the source's ids: for an in-memory trace the order of the allocations.
    std::vector<LiveBlock*> held;
    for (LiveBlock& live : run.live) {
      if (live.size != kNotLive) held.push_back(&live);
    }
    std::sort(held.begin(), held.end(), [](const LiveBlock* a, const LiveBlock* b) { return a->id < b->id; });
    for (LiveBlock* live : held) {
      if (!observers_.empty()) run.tell_block(BlockAction::freed, live->id, live->addr, live->size, live->stream);
      run.policy->deallocate(Block{live->addr, live->size, live->requested, live->id, live->stream}, result.end_time);
      live->size = kNotLive;
    }
    run.allocated = 0;
    run.requested = 0;
    run.policy->release_cached();
    run.policy.reset();
    run.slot_of = {};
    run.live = {};
    run.slots.clear();
    if (run.context_open) {
      device_.close_context();
      contexts_ -= scenario_.device.context_overhead;
      run.context_open = false;
    }
  }

  void check(TenantState& run, std::size_t index) override {
    run.policy->check();
    const PolicyStats stats = run.policy->stats();
    if (stats.allocated != run.allocated) {
      fail(run, index, "policy reports " + std::to_string(stats.allocated) + " bytes allocated, the engine counts " +
                           std::to_string(run.allocated));
    }
    if (stats.reserved != run.device.reserved()) {
      fail(run, index, "policy reports " + std::to_string(stats.reserved) + " bytes reserved, its device " +
                           std::to_string(run.device.reserved()));
    }
    if (stats.reserved < stats.allocated) fail(run, index, "reserved < allocated");
    if (device_.used() > device_.capacity()) fail(run, index, "device over capacity");
  }

  [[noreturn]] void fail(const TenantState& run, std::size_t index, const std::string& what) const override {
    throw Error("check failed after event " + std::to_string(index) + " of " + run.result.workload + " under " +
                run.result.policy + ": " + what);
  }

  void sample(const TenantState& run, std::size_t tenant, std::size_t index, Nanos time) override {
    const Sample sample{time, tenant, index, run.allocated, run.device.reserved(), device_.used()};
    for (Observer* observer : observers_) observer->on_event(sample);
  }

  Device& device_;
  const Scenario& scenario_;
  std::span<Observer* const> observers_;
  std::deque<TenantState> tenants_;  // a deque: each policy holds a reference into its TenantState
  Bytes baseline_used_;
  Bytes peak_used_;
  Bytes contexts_ = 0;  // the contexts of the running tenants
};

TenantState::TenantState(const TenantSpec& tenant_spec, Device& shared_device, Bytes& peak_used)
    : spec(tenant_spec),
      start(tenant_spec.start),
      offset(tenant_spec.start),
      source(open_source(tenant_spec)),
      device(shared_device, peak_used),
      slot_of(source->slots(), kNoSlot) {}

void TenantState::moved(const Move& move) {
  const std::uint32_t id = index_of(move.id);
  const std::uint32_t slot = id < slot_of.size() ? slot_of[id] : kNoSlot;
  if (slot == kNoSlot || live[slot].id != move.id || live[slot].addr != move.from || live[slot].size != move.size) {
    throw Error("policy " + spec.policy.text + " moved allocation " + std::to_string(index_of(move.id)) +
                " from an address or size it does not have");
  }
  live[slot].addr = move.to;
  if (!observers.empty()) tell_block(BlockAction::moved, move.id, move.to, move.size, live[slot].stream, move.from);
}

void TenantState::device_call(SegmentAction action, Addr addr, Bytes bytes) {
  const SegmentEvent event{index, at_event, now, action, addr, bytes, stream};
  for (Observer* observer : observers) observer->on_segment(event);
}

void TenantState::tell_block(BlockAction action, AllocId id, Addr addr, Bytes size, Stream block_stream, Addr from) {
  const BlockEvent event{index, at_event, now, action, id, addr, size, live[slot_of[index_of(id)]].requested, block_stream, from};
  for (Observer* observer : observers) observer->on_block(event);
}

void TenantState::grow_ids(std::uint32_t id) { grow_to_hold(slot_of, id, kNoSlot); }

RunResult run_on(Device& device, const Scenario& scenario, std::span<Observer* const> observers) {
  if (scenario.tenants.empty()) throw Error("a scenario needs at least one tenant");
  return Replay(device, scenario, observers).run();
}

RunResult run(const Scenario& scenario, std::span<Observer* const> observers) {
  SimDevice device(scenario.device, Contexts::per_open);
  return run_on(device, scenario, observers);
}

}  // namespace allocsim
