#include "sim/engine.hpp"

#include <algorithm>
#include <chrono>
#include <deque>
#include <limits>

#include "sim/error.hpp"
#include "sim/metered_device.hpp"
#include "sim/sim_device.hpp"

namespace allocsim {
namespace {

constexpr Bytes kNotLive = std::numeric_limits<Bytes>::max();
constexpr std::size_t kPrefetchDistance = 16;

struct LiveBlock {
  Addr addr = 0;
  Bytes size = kNotLive;
};

// The most bytes alive at once over the whole trace, each request sized as `policy`
// rounds it: what no placement of this policy can go below.
Bytes rounded_lower_bound(const Trace& trace, const Policy& policy) {
  Bytes live = 0;
  Bytes peak = 0;
  for (const Event& event : trace.events) {
    if (event.op == Op::alloc) {
      live += policy.rounded_size(trace.bytes_of(event.id));
      peak = std::max(peak, live);
    } else if (event.op == Op::free) {
      live -= policy.rounded_size(trace.bytes_of(event.id));
    }
  }
  return peak;
}

struct TenantRun final : MoveListener, DeviceCallListener {
  TenantRun(const TenantSpec& tenant_spec, Device& shared_device, Bytes& peak_used)
      : spec(tenant_spec), trace(*tenant_spec.trace), device(shared_device, peak_used), live(trace.allocations()) {}

  // A policy relocated a live block: remember where it is now, to hand it back there.
  void moved(const Move& move) override {
    LiveBlock& block = live[index_of(move.id)];
    if (block.addr != move.from || block.size != move.size) {
      throw Error("policy " + spec.policy + " moved allocation " + std::to_string(index_of(move.id)) +
                  " from an address or size it does not have");
    }
    block.addr = move.to;
    // The engine keeps no stream per block: observers know it from the block's placing.
    if (!observers.empty()) tell_block(BlockAction::moved, move.id, move.to, move.size, 0, move.from);
  }

  // Observers hear of blocks and device calls with the tenant's current request.
  void device_call(SegmentAction action, Addr addr, Bytes bytes) override {
    const SegmentEvent event{index, at_event, now, action, addr, bytes, stream};
    for (Observer* observer : observers) observer->on_segment(event);
  }
  void tell_block(BlockAction action, AllocId id, Addr addr, Bytes size, Stream block_stream, Addr from = 0) {
    const BlockEvent event{index, at_event, now, action, id, addr, size, trace.bytes_of(id), block_stream, from};
    for (Observer* observer : observers) observer->on_block(event);
  }
  void serving(Nanos time, std::size_t event, Stream event_stream) {
    now = time;
    at_event = event;
    stream = event_stream;
  }

  // A tenant starts (its context, then its policy) at spec.start, before its first event.
  bool finished() const { return started && (policy == nullptr || next == trace.events.size()); }
  Nanos next_time() const { return started ? trace.events[next].time + spec.start + delay : spec.start; }

  const TenantSpec& spec;
  const Trace& trace;
  MeteredDevice device;
  std::unique_ptr<Policy> policy;
  bool started = false;
  bool context_open = false;
  Bytes needs = 0;  // rounded_lower_bound, computed at the first OOM
  std::vector<LiveBlock> live;  // by AllocId
  std::size_t next = 0;
  Nanos delay = 0;  // allocator time so far: every later event happens this much later
  Bytes allocated = 0;
  Bytes requested = 0;
  std::vector<AllocId> skipped;  // allocations dropped at an OOM (--on-oom continue), in order
  TenantResult result;
  std::size_t index = 0;  // in the scenario
  std::span<Observer* const> observers;
  Nanos now = 0;              // of the request being served, for observers
  std::size_t at_event = 0;
  Stream stream = 0;
};

class Replay {
 public:
  Replay(Device& device, const Scenario& scenario, const PolicyFactory& make_policy,
         std::span<Observer* const> observers)
      : device_(device), scenario_(scenario), make_policy_(make_policy), observers_(observers),
        baseline_used_(device.used()),
        peak_used_(baseline_used_) {
    for (const TenantSpec& spec : scenario.tenants) {
      if (!spec.trace) throw Error("tenant without a trace");
      TenantRun& run = tenants_.emplace_back(spec, device_, peak_used_);
      run.result.index = tenants_.size() - 1;
      run.index = run.result.index;
      run.observers = observers_;
      if (!observers_.empty()) run.device.listen(&run);
      run.result.workload = spec.trace->info.name;
      run.result.policy = spec.policy;
      run.result.events = spec.trace->events.size();
      run.result.live_lower_bound = spec.trace->live_lower_bound;
    }
  }

  RunResult run() {
    // A policy made late, after other tenants ran, could not say its spec is bad before
    // anything runs: with several tenants, each is tried first on a device of its own. A
    // lone tenant's policy is made before its first event anyway.
    if (tenants_.size() > 1) {
      for (TenantRun& run : tenants_) {
        SimDevice trial(scenario_.device);
        make_policy_(run.spec.policy, trial);
      }
    }
    const auto wall_start = std::chrono::steady_clock::now();
    if (tenants_.size() == 1) {
      while (!tenants_.front().finished()) step(0);  // no merging to do
    } else {
      for (std::size_t tenant = next_tenant(); tenant < tenants_.size(); tenant = next_tenant()) step(tenant);
    }
    for (TenantRun& run : tenants_) {
      if (run.policy) finish(run);
    }
    const std::chrono::duration<double> wall = std::chrono::steady_clock::now() - wall_start;
    for (TenantRun& run : tenants_) {
      if (run.result.peak_allocated > 0) {
        run.result.at_peak = live_breakdown(run.trace, run.result.peak_event, run.skipped);
        run.result.peak_step = step_of(run.trace.info, run.result.peak_event);
      }
      run.result.steps = run.trace.info.step_starts.size();
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
    for (TenantRun& run : tenants_) {
      result.events_replayed += run.result.events_replayed;
      result.tenants.push_back(std::move(run.result));
    }
    return result;
  }

 private:
  std::size_t next_tenant() const {
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
  void start(TenantRun& run, std::size_t tenant) {
    run.started = true;
    run.serving(run.spec.start, 0, 0);
    run.context_open = device_.open_context();
    peak_used_ = std::max(peak_used_, device_.used());
    if (run.context_open) contexts_ += scenario_.device.context_overhead;
    run.result.context = run.context_open ? scenario_.device.context_overhead : 0;
    run.policy = make_policy_(run.spec.policy, run.device);
    run.policy->prepare(ReplaySetup{run.trace.allocations(), &run.trace, &run});
    if (!run.context_open) out_of_memory(run, tenant, 0, scenario_.device.context_overhead, run.spec.start);
  }

  void step(std::size_t tenant) {
    TenantRun& run = tenants_[tenant];
    if (!run.started) return start(run, tenant);
    const std::size_t index = run.next++;
    const Event& event = run.trace.events[index];
    // A free touches its allocation's state, written long ago and out of cache by now: the
    // trace says which one a few events ahead, so fetch it early.
    if (index + kPrefetchDistance < run.trace.events.size()) {
      const Event& ahead = run.trace.events[index + kPrefetchDistance];
      if (ahead.op == Op::free) {
        __builtin_prefetch(&run.live[index_of(ahead.id)]);
        __builtin_prefetch(&run.trace.requested[index_of(ahead.id)]);
      }
    }
    Nanos now = 0;
    if (__builtin_add_overflow(event.time, run.spec.start, &now) || __builtin_add_overflow(now, run.delay, &now)) {
      clock_wraps(run, index, event);
    }
    const Nanos spent_before = run.device.time_spent();
    run.serving(now, index, event.stream);
    switch (event.op) {
      case Op::alloc:
        allocate(run, tenant, index, event, now);
        break;
      case Op::free:
        deallocate(run, event, now);
        break;
      case Op::release:
        run.policy->release_cached();
        break;
      case Op::sync:
        run.policy->synchronize(sync_of(event), now);
        break;
    }
    const Nanos cost = run.device.time_spent() - spent_before;
    if (__builtin_add_overflow(now, cost, &run.result.end_time)) clock_wraps(run, index, event);
    run.delay += cost;
    if (!run.policy) return;  // stopped by an OOM
    run.result.peak_reserved = std::max(run.result.peak_reserved, run.device.reserved());
    if (scenario_.check) check(run, index);
    if (!observers_.empty()) {
      const Sample sample{now + cost, tenant, index, run.allocated, run.device.reserved(), device_.used()};
      for (Observer* observer : observers_) observer->on_event(sample);
    }
  }

  // The simulated clock is the trace's time plus the allocator time spent before: it must
  // stay under 2^64 ns, or later events would seem to come first.
  [[noreturn]] void clock_wraps(const TenantRun& run, std::size_t index, const Event& event) const {
    throw Error(run.result.workload + ": event " + std::to_string(index) + " at time_ns " + std::to_string(event.time) +
                ", plus " + format_nanos(run.delay) + " of allocator time before it" +
                (run.spec.start ? " and its start " + format_nanos(run.spec.start) : std::string()) +
                ", passes the simulated clock's end (2^64 ns); make the trace's times smaller");
  }

  void allocate(TenantRun& run, std::size_t tenant, std::size_t index, const Event& event, Nanos now) {
    const Bytes bytes = run.trace.bytes_of(event.id);
    const Allocation block = run.policy->allocate(Request{event.id, bytes, event.stream, now});
    if (!block) {
      if (!block.hang.empty()) {
        run.result.hang_event = index;
        run.result.hang_reason = std::string(block.hang);
        finish(run);  // the program would never have come back from this request
        return;
      }
      out_of_memory(run, tenant, index, bytes, now);
      return;
    }
    if (scenario_.check && (block->addr % kBlockAlignment != 0 || block->size < bytes || block->id != event.id)) {
      fail(run, index, "block at " + std::to_string(block->addr) + " of " + std::to_string(block->size) +
                           " bytes for a request of " + std::to_string(bytes) + " bytes");
    }
    run.live[index_of(event.id)] = LiveBlock{block->addr, block->size};
    if (!observers_.empty()) run.tell_block(BlockAction::placed, event.id, block->addr, block->size, event.stream);
    run.allocated += block->size;
    run.requested += bytes;
    live_requested_ += bytes;
    TenantResult& result = run.result;
    result.peak_requested = std::max(result.peak_requested, run.requested);
    if (run.allocated > result.peak_allocated) {
      result.peak_allocated = run.allocated;
      result.peak_event = index;
      result.reserved_at_peak = run.device.reserved();
      const PolicyStats stats = run.policy->stats();
      result.largest_free_at_peak = stats.largest_free;
      result.never_touched_at_peak = stats.never_touched;
    }
  }

  void deallocate(TenantRun& run, const Event& event, Nanos now) {
    LiveBlock& live = run.live[index_of(event.id)];
    if (live.size == kNotLive) return;  // its allocation failed and was skipped
    const Bytes bytes = run.trace.bytes_of(event.id);
    if (!observers_.empty()) run.tell_block(BlockAction::freed, event.id, live.addr, live.size, event.stream);
    run.policy->deallocate(Block{live.addr, live.size, bytes, event.id, event.stream}, now);
    run.allocated -= live.size;
    run.requested -= bytes;
    live_requested_ -= bytes;
    live.size = kNotLive;
  }

  // What the device gives `run` now, and who holds the rest.
  TenantShare share_of(const TenantRun& run) const {
    TenantShare share{device_.capacity(), baseline_used_, contexts_, {}};
    for (const TenantRun& other : tenants_) {
      if (&other == &run || !other.policy) continue;
      share.others.push_back(TenantHolding{other.result.index, other.device.reserved(), other.requested});
    }
    return share;
  }

  void out_of_memory(TenantRun& run, std::size_t tenant, std::size_t index, Bytes bytes, Nanos now) {
    const bool first = run.result.oom_count == 0;
    PolicyInspection inspection = run.policy->inspect(first ? Detail::full : Detail::counters);
    if (first) {
      run.needs = rounded_lower_bound(run.trace, *run.policy);
      run.result.needs = run.needs;
      run.result.planned_reserve = inspection.planned_reserve;
    }
    TenantShare share = share_of(run);
    const Bytes usable = share.capacity - std::min(share.capacity, share.before_start + share.contexts);
    OomContext context{bytes,    live_requested_,     run.requested,           usable, device_.available(),
                       run.policy->stats(), inspection.releasable, run.needs, std::move(share)};
    TenantResult& result = run.result;
    const OomKind kind = classify_over_run(context);
    const OomKind request_kind = classify_oom(context);
    OomRecord record{tenant, index, step_of(run.trace.info, index), now, bytes, kind, request_kind, !run.context_open,
                     std::move(context), first ? std::move(inspection.state) : std::string()};
    ++result.oom_count;
    ++result.ooms_by_kind[static_cast<std::size_t>(record.kind)];
    for (Observer* observer : observers_) observer->on_oom(record);
    if (result.ooms.size() < kMaxOomRecords) result.ooms.push_back(std::move(record));
    if (scenario_.on_oom == OnOom::stop || !run.context_open) {
      finish(run);
    } else {
      run.skipped.push_back(run.trace.events[index].id);
    }
  }

  // Records the tenant's results, then ends it as a process exit would: every live block
  // freed, the cache emptied, the policy destroyed and its segments returned.
  void finish(TenantRun& run) {
    TenantResult& result = run.result;
    result.events_replayed = run.next;
    result.allocator_time = run.device.time_spent();
    result.device_mallocs = run.device.mallocs();
    result.device_frees = run.device.frees();
    result.device_failed_mallocs = run.device.failed_mallocs();
    result.bytes_moved = run.device.bytes_moved();
    result.extra = run.policy->inspect(Detail::counters).extra;
    run.serving(result.end_time, run.next, 0);
    for (Observer* observer : observers_) observer->on_exit(run.index, result.end_time);
    // Walk the allocations (not the ids) so that each block goes back with its stream.
    for (std::size_t i = 0; i < run.next; ++i) {
      const Event& event = run.trace.events[i];
      if (event.op != Op::alloc) continue;
      LiveBlock& live = run.live[index_of(event.id)];
      if (live.size == kNotLive) continue;
      if (!observers_.empty()) run.tell_block(BlockAction::freed, event.id, live.addr, live.size, event.stream);
      run.policy->deallocate(Block{live.addr, live.size, run.trace.bytes_of(event.id), event.id, event.stream},
                             result.end_time);
      live.size = kNotLive;
    }
    live_requested_ -= run.requested;
    run.allocated = 0;
    run.requested = 0;
    run.policy->release_cached();
    run.policy.reset();
    run.live = {};
    if (run.context_open) {
      device_.close_context();
      contexts_ -= scenario_.device.context_overhead;
      run.context_open = false;
    }
  }

  void check(TenantRun& run, std::size_t index) {
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

  [[noreturn]] void fail(const TenantRun& run, std::size_t index, const std::string& what) const {
    throw Error("check failed after event " + std::to_string(index) + " of " + run.result.workload + " under " +
                run.result.policy + ": " + what);
  }

  Device& device_;
  const Scenario& scenario_;
  const PolicyFactory& make_policy_;
  std::span<Observer* const> observers_;
  std::deque<TenantRun> tenants_;  // a deque: each policy holds a reference into its TenantRun
  Bytes baseline_used_;
  Bytes peak_used_;
  Bytes live_requested_ = 0;  // every tenant's
  Bytes contexts_ = 0;        // the contexts of the running tenants
};

}  // namespace

RunResult run_on(Device& device, const Scenario& scenario, const PolicyFactory& make_policy,
                 std::span<Observer* const> observers) {
  if (scenario.tenants.empty()) throw Error("a scenario needs at least one tenant");
  return Replay(device, scenario, make_policy, observers).run();
}

RunResult run(const Scenario& scenario, const PolicyFactory& make_policy, std::span<Observer* const> observers) {
  SimDevice device(scenario.device, Contexts::per_open);
  return run_on(device, scenario, make_policy, observers);
}

}  // namespace allocsim
