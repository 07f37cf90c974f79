// allocsim advise as a study: the seed articles' checklist for a workload that runs out of
// memory, answered by simulation. Each candidate is one change a user can make, built as a
// workload spec (through the model token table), a policy spec (registry names and keys) and
// the other tenants as they would then run, with the exact words of the change (the
// tf.config call, the environment variable, the code). Every candidate is replayed the way
// `allocsim run` replays a scenario (load_workload, the engine, make_policy), so a line's
// figures are those of a run of exactly its specs. Limits (memory_limit, the system reserve,
// a memory fraction) are found by bisection, and the line is the run at the value found.
// When no single change fits (but inference only), two at a time are tried: a setting with
// a model change, or two model changes of different tokens.
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "sim/device.hpp"
#include "studies/scenario_choice.hpp"
#include "workloads/model/lower.hpp"

namespace allocsim {

struct AdviseStudy {
  std::string workload;                // a model workload, or a trace (then --framework is needed)
  std::optional<Framework> framework;  // none: the workload's framework token
  std::string policy;                  // the allocator it runs with now; empty: the framework's default
  std::vector<TenantChoice> tenants;   // the other processes on the device, after the workload
  DeviceSpec device;
  unsigned threads = 1;
};

// How much a change asks of the user, least first: the ranking's second key, after fits.
enum class Impact : std::uint8_t {
  none,       // the program as it is
  setting,    // an allocator or process setting: the same model, batch and numerics
  loop,       // the training loop changes, the effective batch and precision stay (accumulation)
  precision,  // mixed precision
  optimizer,  // a smaller optimizer state: other training dynamics
  batch,      // a smaller effective batch
  inference,  // no training at all
};
std::string_view name_of(Impact impact);

struct AdviseCandidate {
  std::string what;    // "memory growth", "batch 128 x 2 accumulation steps"
  std::string change;  // what the user changes, exactly
  Impact impact = Impact::none;
  std::string workload;               // the advised tenant's workload spec (tenant 0)
  std::string policy;                 // its policy spec
  std::vector<TenantChoice> tenants;  // the other tenants, as they run with this change
  std::int64_t effective_batch = 0;   // batch x accumulation; 0 for a trace
  int changes = 1;                    // 0 for the program as it is, 2 for a pair
};

struct AdviseLine {
  AdviseCandidate candidate;
  bool fits = false;          // every tenant ran its whole trace
  Bytes peak_allocated = 0;   // the advised tenant's
  Bytes peak_reserved = 0;    // the advised tenant's
  Bytes peak_device = 0;      // the device at its fullest: every tenant, contexts included
  Bytes headroom = 0;         // capacity - peak_device: what the card still had free then
  Nanos allocator_time = 0;   // the advised tenant's simulated allocator time
  std::string verdict;        // why it does not fit (the first tenant that failed); empty when it fits
};

// A checklist item not tried, and why: not modelled for this model, not on this device.
struct AdviseNote {
  std::string what;
  std::string why;
};

struct AdviseResults {
  DeviceSpec device;
  Framework framework = Framework::torch;
  std::string workload;          // the advised workload as run (the framework token set)
  AdviseLine as_is;              // the program unchanged, under the framework's default allocator
  std::vector<AdviseLine> lines;  // every candidate but as_is, ranked (rank_lines)
  bool pairs_tried = false;       // no single change fit (but inference), so two at a time were tried too
  std::vector<AdviseNote> not_tried;
};

// The ranking: what fits first, then the least impact, then the most headroom, then by name.
void rank_lines(std::vector<AdviseLine>& lines);

// Error when the workload is neither a model nor a trace, a framework is needed and not
// given, --framework contradicts the workload's own token, or the policy is not one of the
// framework's allocators.
AdviseResults run_advise(const AdviseStudy& study);

// One row per line, as_is first, then the ranked lines (columns: advise_columns()).
void write_advise_csv(std::ostream& out, const AdviseResults& results);

}  // namespace allocsim
