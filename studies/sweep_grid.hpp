// What a sweep runs: list-valued options expanded into the cross product of points.
// Lists are comma separated; a number or size may be a range, `a:b` doubling from a to b
// or `a:b:s` stepping by s. A policy spec keeps its own commas, read as `run` reads one
// spec (split_spec_list: `bfc:growth=true,limit=4GiB,caching` is two). A workload spec is
// one value, never split: each --workload is one, and several workloads repeat the option.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sim/engine.hpp"
#include "studies/scenario_choice.hpp"
#include "sim/units.hpp"

namespace allocsim {

// Items of a list, spec commas kept: split_spec_list (sim/spec.hpp), the way `run` reads one spec.
std::vector<std::string> split_list(std::string_view text, std::string_view what);

// Whole numbers: `1:1024` (1, 2, 4, ... 1024), `8:64:8`, `1,3:12` ... ascending, each once.
std::vector<std::int64_t> parse_int_list(std::string_view text, std::string_view what);

// Sizes, the same grammar: `16GiB,80GiB`, `1GiB:16GiB` (doubling), `8GiB:12GiB:1GiB`.
std::vector<Bytes> parse_size_list(std::string_view text, std::string_view what);

// The options of `allocsim sweep`, each a list as the user typed it (empty: not given).
struct SweepOptions {
  std::vector<std::string> workloads;  // --workload, repeatable: each one spec, commas and all
  std::vector<std::string> policies;   // --policy, repeatable; "all" is every registered policy
  // Policies made in code (the Python package's policies written in Python): an item of
  // `policies` equal to one's text is that policy (policy_makers).
  std::vector<PolicyMaker> given_policies;
  // Workloads made in code (the Python package's traces): an item of `workloads` equal to
  // one's text is it.
  std::vector<WorkloadSpec> given_workloads;
  std::vector<std::string> tenants;    // --tenant WORKLOAD@POLICY: the same co-tenants at every point
  std::vector<std::string> params;     // --param KEY=LIST: a generator workload's option, swept
  DeviceChoice device;                 // presets and capacities are lists
  std::string on_oom = "stop";
  // Model token axes by name (the `axis` of model_tokens(): batch, sequence, precision,
  // optimizer, accumulation, steps, mode), each a list as the user typed it.
  std::map<std::string, std::string, std::less<>> model_axes;
};

// A model axis as the sweep's options show it, read from model_tokens().
struct ModelAxis {
  std::string name;        // "batch": the option --batch
  std::string value_name;  // "NUMBERS", or the valid words: "fp32,amp,bf16"
  std::string help;
};
std::vector<ModelAxis> model_axes();

struct SweepPoint {
  std::size_t index = 0;  // in expansion order, the `point` column
  std::string workload;   // the primary tenant's full spec: as given, or to_string of its swept ModelSpec
  std::string policy;
  Scenario scenario;      // traces not loaded yet: TenantSpec::trace is null
  std::vector<WorkloadSpec> workloads;  // each tenant's workload, for loading
  std::vector<std::string> leading;    // the values of sweep_columns() for this point
};

// The parameter columns every sweep CSV starts with, before the metric columns.
const std::vector<std::string>& sweep_columns();

// The cross product, outermost first: workload (in the order given), each --param in the order given, precision, optimizer, sequence,
// accumulation, steps, mode, device, capacity, policy, on_oom, batch (innermost).
// Every spec is checked here (Error naming the bad one), before anything runs.
std::vector<SweepPoint> expand_sweep(const SweepOptions& options);

}  // namespace allocsim
