// The one table of policies. The CLI's help, `allocsim policies`, the conformance tests
// and the benchmarks all iterate it; adding a policy is one file pair and one line here.
#pragma once

#include <memory>
#include <span>
#include <string>
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

// A policy spec read once, where a command takes it: the row its name or alias names, its
// arguments checked against the row's parameters, and its text as written (what results
// and messages show).
struct PolicySpec {
  const PolicyInfo* row;
  Params params;
  std::string text;

  MadePolicy build(Device& device) const { return row->make(params, device); }
};

// The name (or alias) found in the registry, every key checked against its row's
// parameters. Throws Error naming the bad name or key; values are not read yet.
PolicySpec parse_policy_spec(std::string_view text);

// Every value checked too, without a trace or a real device: the policy's own code reads
// them as it is built, on an idle SimDevice of a default DeviceSpec (no constructor
// allocates from its device; they read its capacity and granularity). No row checks its
// values without building yet. Throws the policy's Error naming the bad key or value.
void check_policy_spec(const PolicySpec& spec);
void check_policy_spec(std::string_view text);  // parse_policy_spec, then the values

// "name:key=value,..." -> a policy on `device`; throws Error on an unknown policy or key.
std::unique_ptr<Policy> make_policy(std::string_view spec, Device& device);

// The same, with the loop the engine runs it by: the PolicyFactory a replay passes to run().
MadePolicy build_policy(std::string_view spec, Device& device);

}  // namespace allocsim
