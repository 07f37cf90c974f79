// allocsim advise as a study: the seed articles' checklist for a workload that runs out of
// memory, answered by simulation. Each candidate is one change a user can make, built as a
// workload spec (through the model token table), a policy spec (registry names and keys) and
// the other tenants as they would then run, with the exact words of the change (the
// tf.config call, the environment variable, the code). Every candidate is replayed the way
// `allocsim run` replays a scenario (load_workload, the engine), so a line's
// figures are those of a run of exactly its specs. Limits (memory_limit, the system reserve,
// a memory fraction) are found by bisection, and the line is the run at the value found.
// Every change is in one of two groups: it keeps the training the same (the same model,
// numerics and global batch: allocator settings, checkpointing, a fused optimizer,
// accumulation, sharding over the ranks the job has) or it changes it (another optimizer,
// LoRA, lower precision, a smaller batch, inference); the first group ranks first. For a
// decoder advise also tries what LLM practitioners reach for, each built from the model
// token table: fused AdamW, paged and 8-bit AdamW (bitsandbytes), LoRA and QLoRA (PEFT),
// ZeRO-1/2/3 and FSDP over --ranks N, and a paged KV cache for a generation.
// When no single change that keeps the training fits, two at a time are tried: a setting
// with a model change, or two model changes of different tokens.
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "sim/csv_columns.hpp"
#include "sim/device.hpp"
#include "studies/scenario_choice.hpp"
#include "studies/study_table.hpp"
#include "workloads/catalogue.hpp"
#include "workloads/model/lower.hpp"

namespace allocsim {

struct AdviseStudy {
  WorkloadSpec workload;               // a model workload, or a trace (then --framework is needed)
  std::optional<Framework> framework;  // none: the workload's framework token
  std::optional<PolicySpec> policy;    // the allocator it runs with now; none: the framework's default
  std::vector<TenantChoice> tenants;   // the other processes on the device, after the workload
  DeviceSpec device;
  // The GPUs the job runs on, each rank this workload (data parallel): ZeRO and FSDP are
  // tried over them when there are two or more. Error below 1.
  std::int64_t ranks = 1;
  unsigned threads = 1;
};

// The study as the user asks for it: the command line's options, the Python keywords.
struct AdviseOptions {
  std::string workload;                // one spec, commas and all, or a trace
  std::vector<WorkloadSpec> given_workloads;  // made in code (a Python trace): `workload` equal to one's text is it
  std::string framework;               // "tf", "torch" or "" (the workload's token)
  std::string policy;                  // one spec, or "" (the framework's default)
  std::string alloc_conf;              // PYTORCH_CUDA_ALLOC_CONF's text, instead of policy
  std::vector<std::string> tenants;    // WORKLOAD@POLICY[@start=TIME]
  DeviceChoice device;                 // one device
  std::int64_t ranks = 1;
  int threads = 0;                     // 0: every core
};

// The options read and checked (Error naming the bad one); alloc_conf's warnings are
// lines on `warnings`.
AdviseStudy advise_study(const AdviseOptions& options, std::ostream& warnings);

// How much a change asks of the user, least first: the ranking's third key, after fits and
// the group. Every impact before `precision` keeps the training the same, every one from it
// on changes it (group_of).
enum class Impact : std::uint8_t {
  none,            // the program as it is
  setting,         // an allocator or process setting: the same model, batch and numerics
  implementation,  // the same computation by another kernel or memory: a fused optimizer, a paged KV cache
  loop,            // the training loop changes, the effective batch and precision stay (accumulation, checkpointing)
  sharding,        // the job's ranks share its state (ZeRO, FSDP): the same global batch and numerics
  offload,         // state moved out of the card's memory (paged optimizer state): the same numerics, slower
  precision,       // mixed precision
  optimizer,       // a smaller optimizer state: other training dynamics
  adapters,        // LoRA: the base frozen (in the compute dtype), low-rank adapters trained
  quantized,       // QLoRA: adapters over a base quantised to 4 bits, a further step from the model as it was
  batch,           // a smaller effective batch
  inference,       // no training at all
};
std::string_view name_of(Impact impact);

// The ranking's second key: whether the training (or a generation's results) stays as it is.
enum class Group : std::uint8_t { keeps_training, changes_training };
Group group_of(Impact impact);
std::string_view name_of(Group group);  // "keeps_training", "changes_training": the CSV's words

struct AdviseCandidate {
  std::string what;    // "memory growth", "batch 128 x 2 accumulation steps"
  std::string change;  // what the user changes, exactly
  Impact impact = Impact::none;
  WorkloadSpec workload;              // the advised tenant's workload (tenant 0)
  PolicySpec policy;                  // its policy spec
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
  bool training = true;          // it trains (a trace counts as training): the groups' words
  AdviseLine as_is;              // the program unchanged, under the framework's default allocator
  std::vector<AdviseLine> lines;  // every candidate but as_is, ranked (rank_lines)
  bool pairs_tried = false;       // no single change fit (but inference), so two at a time were tried too
  std::vector<AdviseNote> not_tried;
};

// The ranking: what fits first, then what keeps the training, then the least impact, then the
// most headroom, then by name.
void rank_lines(std::vector<AdviseLine>& lines);

// Error when the workload is neither a model nor a trace, a framework is needed and not
// given, --framework contradicts the workload's own token, the policy is not one of the
// framework's allocators, or ranks is below 1.
AdviseResults run_advise(const AdviseStudy& study);

// A line of the results with its rank (0 for the program as it is): a row of the column table.
struct AdviseRow {
  const AdviseResults* results;
  const AdviseLine* line;
  std::size_t rank;
};

// Every field of a line, declared once: the CSV, the Python DataFrame and the terminal's table.
std::span<const Column<AdviseRow>> advise_columns();
// The terminal's table: the columns in_table, in the order it shows them.
std::vector<Column<AdviseRow>> advise_table_columns();
// as_is (rank 0), then the ranked lines.
std::vector<AdviseRow> advise_rows(const AdviseResults& results);

// One row per line, as_is first, then the ranked lines (columns: advise_column_names()).
StudyTable advise_table(const AdviseResults& results);
void write_advise_csv(std::ostream& out, const AdviseResults& results);
std::vector<std::string_view> advise_column_names();

}  // namespace allocsim
