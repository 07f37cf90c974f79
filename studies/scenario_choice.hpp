// What a command's scenario is made of, as the user chose it: the simulated devices
// (preset names and overrides, lists where a sweep takes them) and the tenants
// (WORKLOAD@POLICY). Every command reads them this one way.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "policies/registry.hpp"
#include "sim/device.hpp"
#include "workloads/catalogue.hpp"

namespace allocsim {

struct DeviceChoice {
  std::string presets;         // --device: preset names, a list ("" = the plain 'sim' device)
  std::string capacities;      // --capacity: sizes, a list or range ("" = the preset's)
  std::string context;         // --context: one size
  std::string granularity;     // --granularity: one size
  std::string cost_profile;    // --device-profile: a calibrated cost model (JSON)
};

// Every device the choice names, presets outer and capacities inner. Error on an unknown
// preset, a zero capacity, a granularity that is not a power of two, or a bad size.
std::vector<DeviceSpec> chosen_devices(const DeviceChoice& choice);

// --granularity SIZE: a page, so a power of two (1 B, 2MiB); Error naming the option otherwise.
Bytes parse_granularity(const std::string& text);

struct TenantChoice {
  WorkloadSpec workload;
  PolicySpec policy;
  Nanos start = 0;  // when the process starts, on the simulated clock
};

// "WORKLOAD@POLICY" or "WORKLOAD@POLICY@start=TIME" (the last '@' before them splits: a
// path may hold one); Error when either is empty, the time is bad, or the policy spec
// (parse_policy_spec) or then the workload spec (parse_workload_spec) is.
TenantChoice parse_tenant(const std::string& text);

// The tenant as parse_tenant reads it back: "WORKLOAD@POLICY", and "@start=TIME" when it
// starts after 0, in the largest unit that says the time exactly (1s, 1500ms, 250ns).
std::string to_string(const TenantChoice& tenant);

// The one device of a command that runs one scenario; Error when the choice names several.
DeviceSpec chosen_device(const DeviceChoice& choice);

}  // namespace allocsim
