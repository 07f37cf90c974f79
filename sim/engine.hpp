// The discrete-event loop: one or more tenants, each replaying its own trace through its
// own policy, on one device. Events of all tenants are merged in time order (ties: lower
// tenant first, then trace order). Each tenant's clock runs late by the time its
// allocator has spent in device calls, so slow allocators delay their program.
#pragma once

#include <memory>
#include <span>
#include <vector>

#include "sim/device.hpp"
#include "sim/event_source.hpp"
#include "sim/made_policy.hpp"
#include "sim/observer.hpp"
#include "sim/policy.hpp"
#include "sim/result.hpp"
#include "sim/trace.hpp"

namespace allocsim {

struct TenantSpec {
  TenantSpec() = default;
  TenantSpec(std::shared_ptr<const Trace> trace_in, PolicyMaker policy_in, Nanos start_in = 0)
      : trace(std::move(trace_in)), policy(std::move(policy_in)), start(start_in) {}
  // A tenant whose events come from `source`: a stream (a .atrace file, a generator), so
  // that the replay holds only the live allocations (a policy that plans over the whole
  // trace, optimal, refuses it), or a trace loading in the background (sim/background_trace.hpp).
  static TenantSpec from_source(std::shared_ptr<const EventSourceFactory> source, PolicyMaker policy, Nanos start = 0) {
    TenantSpec spec(nullptr, std::move(policy), start);
    spec.source = std::move(source);
    return spec;
  }

  std::shared_ptr<const Trace> trace;
  // Read and checked where the command took it (policies/registry's parse_policy_spec);
  // made on the device when the tenant starts.
  PolicyMaker policy;
  Nanos start = 0;     // added to every event time
  std::shared_ptr<const EventSourceFactory> source;  // used when trace is null
};

enum class OnOom : std::uint8_t {
  stop,          // the tenant crashes, as a program would: its memory goes back to the device
  continue_run,  // --on-oom continue: count the OOM, drop the request and its free, go on
};

struct Scenario {
  DeviceSpec device;
  std::vector<TenantSpec> tenants;
  OnOom on_oom = OnOom::stop;
  bool check = false;  // policy.check() and engine invariants after every event
};

// Replays on a SimDevice built from scenario.device.
RunResult run(const Scenario& scenario, std::span<Observer* const> observers = {});

// Replays on a device the caller owns (a real GPU); scenario.device only names it.
RunResult run_on(Device& device, const Scenario& scenario, std::span<Observer* const> observers = {});

}  // namespace allocsim
