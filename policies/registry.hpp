// The one table of policies. The CLI's help, `allocsim policies`, the conformance tests
// and the benchmarks all iterate it; adding a policy is one file pair and one line here.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "policies/recording_adoption.hpp"
#include "sim/device.hpp"
#include "sim/framework.hpp"
#include "sim/made_policy.hpp"
#include "sim/policy.hpp"
#include "sim/spec.hpp"

namespace allocsim {

// What a row reads from a spec's values, once: how to make the policy from its typed
// settings, and what those settings say of its use of the device's segments.
struct ReadPolicy {
  MakePolicy make;
  SegmentTraits segments;
};

struct PolicyInfo {
  std::string_view name;
  std::string_view alias;    // another name users type for it, or empty
  // Whose allocator it is: the framework whose own code `models` names (cuda: CUDA's own
  // calls, cudaMalloc or its stream-ordered pool, whichever framework turns them on).
  Framework framework;
  std::string_view models;   // the real allocator it reproduces
  std::string_view summary;
  std::span<const ParamInfo> params;
  // A spec's values read once, without a device, into the policy's typed settings (every
  // key's type and range, and the keys' agreement: throws Error naming a bad value); what
  // it returns makes the policy from them, with the direct loop of its type, and says what
  // they make of its segments.
  ReadPolicy (*read)(const Params& params);
  // A policy this row made can start where a PyTorch recording began, and shows its layout
  // (policies/recording_adoption.hpp): the view over it; null for every other row.
  std::unique_ptr<RecordingAdoption> (*adoption)(Policy& policy) = nullptr;
};

std::span<const PolicyInfo> all_policies();

// By name or alias; throws Error listing the valid names.
const PolicyInfo& find_policy(std::string_view name);

// A policy spec read once, where a command takes it: the row its name or alias names, its
// arguments read by the row into typed settings (keys and values checked), and its text
// as written (what results and messages show).
struct PolicySpec {
  const PolicyInfo* row = nullptr;
  std::string text;
  Spec spec;  // the keys as written, in order: what a study changes one of (advise)
  MakePolicy make;  // from the settings read: make(device) is the policy on a device
  SegmentTraits segments;  // what the settings read make of the device's segments

  // What a tenant carries (sim/engine.hpp): this spec, made when the tenant starts.
  PolicyMaker maker() const { return PolicyMaker{text, make}; }
};

// The name (or alias) found in the registry, every key and value checked by its row.
// Throws Error naming the bad name, key or value.
PolicySpec parse_policy_spec(std::string_view text);

// A spec made or changed in code (advise's settings), read and checked as parse_policy_spec
// reads its text, to_string(spec).
PolicySpec policy_spec(Spec spec);

// The policies of --policy lists (each split as split_spec_list splits), in order, each
// read and checked; `all` is every row of the registry.
std::vector<PolicySpec> parse_policy_lists(std::span<const std::string> lists);

// "name:key=value,..." -> a policy on `device`; throws Error on an unknown policy or key.
std::unique_ptr<Policy> make_policy(std::string_view spec, Device& device);

// "name:key=value,..." read and checked, as a tenant carries it; throws as parse_policy_spec.
PolicyMaker policy_maker(std::string_view spec);

// The policies of --policy lists as parse_policy_lists reads them, each as policy_maker
// reads it. `given`: policies made in code that a study's options carry (the Python
// package's policies written in Python): an item equal to one's text is that policy.
std::vector<PolicyMaker> policy_makers(std::span<const std::string> lists, std::span<const PolicyMaker> given = {});

}  // namespace allocsim
