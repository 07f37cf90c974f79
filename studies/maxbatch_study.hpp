// allocsim maxbatch as a study: for every device, policy and variant of a model workload
// (as given, with amp when it is fp32, with gradient accumulation), the largest batch
// that runs without OOM (find_max_batch), the searches shared among threads, and the CSV
// of the results drawn from one column table.
#pragma once

#include <cstdint>
#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "sim/device.hpp"
#include "studies/maxbatch.hpp"
#include "workloads/model/model_spec.hpp"

namespace allocsim {

struct BatchVariant {
  std::string label;                  // "" for the workload as given
  const ModelToken* token = nullptr;  // the token the variant sets, on top of the workload's
  std::int64_t value = 0;             // its number, for a numbered token
  std::int64_t per_step = 1;          // micro-batches per optimizer step

  std::string name() const { return token ? spell(*token, value) : "as given"; }
};

struct MaxBatchStudy {
  std::string workload;               // a model workload, checked by the caller
  std::vector<std::string> policies;  // checked specs
  std::vector<DeviceSpec> devices;
  std::int64_t limit = 65536;
  int neighbours = 4;
  int accumulation = 4;               // micro-batches of the accumulation variant
  unsigned threads = 1;
  std::function<bool()> stop;         // asked between searches: true starts no more of them
};

struct MaxBatchRow {
  std::string workload;
  DeviceSpec device;
  std::string policy;
  BatchVariant variant;
  MaxBatch found;
  bool searched = false;  // false: stopped before this search ran
};

struct MaxBatchResults {
  std::vector<BatchVariant> variants;
  std::vector<MaxBatchRow> rows;  // device, then policy, then variant (the first: as given)
};

// The variants of `workload`: as given, with amp when it is fp32, with accN.
std::vector<BatchVariant> batch_variants(const ModelSpec& workload, int accumulation);

MaxBatchResults run_maxbatch(const MaxBatchStudy& study);

void write_maxbatch_csv(std::ostream& out, const MaxBatchResults& results);

}  // namespace allocsim
