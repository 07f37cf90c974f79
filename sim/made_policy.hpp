// What a policy factory gives the engine: the policy, and the loop that runs it directly.
// Apart from the engine so that the registry can name it without seeing the engine.
#pragma once

#include <concepts>
#include <functional>
#include <memory>
#include <string>
#include <utility>

#include "sim/device.hpp"
#include "sim/policy.hpp"

namespace allocsim {

class PlainReplay;  // sim/tenant_replay.hpp

// Runs a plain replay (one tenant, no checks, no observers) with the policy's own type, so
// that the loop calls it directly: direct_loop<P> (sim/direct_loop.hpp), one per registry row.
using DirectLoop = void (*)(Policy& policy, const PlainReplay& replay);

// A policy as a factory makes it: with its direct loop, or none (then the engine's loop
// calls it through Policy's virtual functions).
struct MadePolicy {
  template <std::derived_from<Policy> P>
  MadePolicy(std::unique_ptr<P> made, DirectLoop direct = nullptr) : policy(std::move(made)), loop(direct) {}

  std::unique_ptr<Policy> policy;
  DirectLoop loop;
};

// A tenant's policy as its command read it: the spec as written (what results and messages
// show) and how to make it on the tenant's device when the tenant starts. The registry's
// PolicySpec gives one (policies/registry.hpp), a policy written in Python another.
// Makes a policy on a device from settings already read and checked.
using MakePolicy = std::function<MadePolicy(Device& device)>;

struct PolicyMaker {
  std::string text;
  MakePolicy make;
};

}  // namespace allocsim
