// allocsim maxbatch as a study: for every device, policy and variant of a model workload
// (as given, with amp when it is fp32, with gradient accumulation), the largest batch
// that runs without OOM (find_max_batch), the searches shared among threads, and the CSV
// of the results drawn from one column table. --resume reads such a CSV back: the searches
// whose rows are there are kept as written and not run again.
#pragma once

#include <cstdint>
#include <functional>
#include <ostream>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "sim/csv_columns.hpp"
#include "sim/device.hpp"
#include "sim/made_policy.hpp"
#include "studies/maxbatch.hpp"
#include "studies/scenario_choice.hpp"
#include "studies/study_table.hpp"
#include "workloads/catalogue.hpp"

namespace allocsim {

struct BatchVariant {
  const ModelToken* token = nullptr;  // the token the variant sets, on top of the workload's
  std::int64_t value = 0;             // its number, for a numbered token
  std::int64_t per_step = 1;          // micro-batches per optimizer step

  std::string name() const { return token ? spell(*token, value) : "as given"; }
};

struct MaxBatchStudy {
  WorkloadSpec workload;              // a model workload (Error at plan when it is not)
  std::vector<PolicyMaker> policies;
  std::vector<DeviceSpec> devices;
  std::int64_t limit = 65536;
  int neighbours = 4;
  int accumulation = 4;               // micro-batches of the accumulation variant
  unsigned threads = 1;
  std::function<bool()> stop;         // asked between searches: true starts no more of them
};

// The study as the user asks for it: the command line's options, the Python keywords.
struct MaxBatchOptions {
  std::string workload;               // one model workload spec, commas and all
  std::vector<std::string> policies;  // --policy lists; "all" is every registered policy
  // Policies made in code (the Python package's): an item of `policies` equal to one's text is it.
  std::vector<PolicyMaker> given_policies;
  DeviceChoice device;                // presets and capacities are lists
  std::int64_t limit = 65536;
  int neighbours = 4;
  int accumulation = 4;
  int threads = 0;                    // 0: every core
};

// The options read and checked (Error naming the bad one); `stop` left empty.
MaxBatchStudy maxbatch_study(const MaxBatchOptions& options);

struct MaxBatchRow {
  std::string workload;
  DeviceSpec device;
  PolicyMaker policy;
  BatchVariant variant;
  MaxBatch found;
  bool searched = false;  // false: stopped before this search ran, or kept
  std::vector<std::string> kept;  // its CSV cells from an earlier run (--resume): not searched again

  bool done() const { return searched || !kept.empty(); }
};

struct MaxBatchResults {
  std::vector<BatchVariant> variants;
  std::vector<MaxBatchRow> rows;  // device, then policy, then variant (the first: as given)
};

// The variants of `workload`: as given, with amp when it is fp32, with accN.
std::vector<BatchVariant> batch_variants(const ModelSpec& workload, int accumulation);

// Every row of the study, none searched yet.
MaxBatchResults plan_maxbatch(const MaxBatchStudy& study);

// Searches the rows of `results` that are not done, until study.stop says so.
void search_maxbatch(const MaxBatchStudy& study, MaxBatchResults& results);

// plan_maxbatch, then search_maxbatch.
MaxBatchResults run_maxbatch(const MaxBatchStudy& study);

// Every field of a search, declared once: the CSV (and --resume's reading of it), the Python
// DataFrame, and each figure of the terminal's sentences.
std::span<const Column<MaxBatchRow>> maxbatch_columns();

// The header, then each row that is done: a kept one as it was read, the others from their search.
StudyTable maxbatch_table(const MaxBatchResults& results);

// The header, then each row: a kept one as it was read, the others from their search.
void write_maxbatch_csv(std::ostream& out, const MaxBatchResults& results);

// For --resume: marks as kept each row of `results` that a CSV of write_maxbatch_csv
// holds; returns how many. A cut last line is dropped (that search runs again). Error,
// naming `name`, when the header is not maxbatch's or a row is no search of this study.
std::size_t read_maxbatch_csv(std::istream& in, MaxBatchResults& results, const std::string& name);

// Where a column is in the CSV, e.g. "largest_batch".
std::size_t maxbatch_column(std::string_view name);

}  // namespace allocsim
