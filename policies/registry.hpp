// The one table of policies. The CLI's help, `allocsim policies`, the conformance tests
// and the benchmarks all iterate it; adding a policy is one file pair and one line here.
#pragma once

#include <memory>
#include <span>
#include <string_view>

#include "policies/recording_replay.hpp"
#include "sim/device.hpp"
#include "sim/framework.hpp"
#include "sim/made_policy.hpp"
#include "sim/policy.hpp"
#include "sim/spec.hpp"

namespace allocsim {

struct PolicyInfo {
  std::string_view name;
  std::string_view alias;    // another name users type for it, or empty
  // Whose allocator it is: the framework whose own code `models` names (cuda: CUDA's own
  // calls, cudaMalloc or its stream-ordered pool, whichever framework turns them on).
  Framework framework;
  std::string_view models;   // the real allocator it reproduces
  std::string_view summary;
  std::span<const ParamInfo> params;
  MadePolicy (*make)(const Params& params, Device& device);  // with the direct loop of its type
  // A policy this row made can start where a PyTorch recording began, and shows its layout
  // (policies/recording_replay.hpp): the view over it; null for every other row.
  std::unique_ptr<RecordingReplay> (*recording)(Policy& policy) = nullptr;
};

std::span<const PolicyInfo> all_policies();

// By name or alias; throws Error listing the valid names.
const PolicyInfo& find_policy(std::string_view name);

// The whole spec checked, name and every key and value, without a trace or a real device:
// the policy is built on an idle SimDevice of a default DeviceSpec, so its own code reads
// every value. Throws the policy's Error naming the bad key or value. No constructor
// allocates from its device (they read its capacity and granularity), so idle is enough.
void check_policy_spec(std::string_view spec);

// "name:key=value,..." -> a policy on `device`; throws Error on an unknown policy or key.
std::unique_ptr<Policy> make_policy(std::string_view spec, Device& device);

// The same, with the loop the engine runs it by: the PolicyFactory a replay passes to run().
MadePolicy build_policy(std::string_view spec, Device& device);

}  // namespace allocsim
