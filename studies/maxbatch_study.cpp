#include "studies/maxbatch_study.hpp"

#include <array>
#include <cstdio>
#include <map>
#include <span>

#include "policies/registry.hpp"
#include "sim/csv_columns.hpp"
#include "sim/engine.hpp"
#include "sim/error.hpp"
#include "sim/interrupt.hpp"
#include "studies/csv_resume.hpp"
#include "studies/outcome.hpp"
#include "studies/parallel.hpp"
#include "studies/scenario_choice.hpp"
#include "studies/sweep_run.hpp"
#include "workloads/catalogue.hpp"

namespace allocsim {
namespace {

BatchProbe probe(const RunResult& result, std::int64_t batch) {
  const TenantResult& tenant = result.tenants.front();
  BatchProbe probe;
  probe.batch = batch;
  probe.fits = ran_through(tenant);
  probe.peak_requested = tenant.peak_requested;
  probe.peak_allocated = tenant.peak_allocated;
  probe.peak_reserved = tenant.peak_reserved;
  probe.fragmentation = tenant.fragmentation_at_peak();
  probe.failure = failure_kind(tenant);
  return probe;
}

using Row = MaxBatchRow;
MetricValue yes_no(bool value) { return std::string(value ? "yes" : "no"); }
MetricValue at_largest(const Row& row, Bytes BatchProbe::*field) {
  const BatchProbe* at = row.found.at_largest();
  if (!at) return {};
  return at->*field;
}
MetricValue fit(const Row& row, double LinearFit::*field) {
  const auto line = fit_peak(row.found.probes, &BatchProbe::peak_allocated);
  if (!line) return {};
  return (*line).*field;
}

// For people, a line's bytes in MiB to a tenth (an intercept may be negative).
std::string mib(const MetricValue& value) {
  const double* bytes = std::get_if<double>(&value);
  if (!bytes) return format_human(value, Unit::bytes);
  char text[32];
  std::snprintf(text, sizeof text, "%.1f MiB", *bytes / (1024.0 * 1024.0));
  return text;
}

// In the CSV's order. The terminal writes sentences, each figure its column's text and, where
// the sentence names it, its label; in_table false: the terminal says it in other words.
const std::array<Column<Row>, 18> kColumns{{
    {.name = "workload", .unit = Unit::text, .help = "the model workload as given",
     .get = [](const Row& r) -> MetricValue { return r.workload; }},
    {.name = "device", .unit = Unit::text, .help = "the device preset or 'sim'",
     .get = [](const Row& r) -> MetricValue { return r.device.name; }},
    {.name = "capacity_bytes", .unit = Unit::bytes, .help = "device memory in total",
     .get = [](const Row& r) -> MetricValue { return r.device.capacity; }},
    {.name = "context_bytes", .unit = Unit::bytes, .help = "the CUDA context's share",
     .get = [](const Row& r) -> MetricValue { return r.device.context_overhead; }, .label = "context"},
    {.name = "policy", .unit = Unit::text, .help = "the policy spec",
     .get = [](const Row& r) -> MetricValue { return r.policy.text; }},
    {.name = "variant", .unit = Unit::text, .help = "as given, or the token added (amp, accN)",
     .get = [](const Row& r) -> MetricValue { return r.variant.name(); }},
    {.name = "largest_batch", .unit = Unit::count,
     .help = "the largest batch (per micro-batch) that ran; empty when not even 1 did",
     .get = [](const Row& r) -> MetricValue {
       if (!r.found.largest) return {};
       return static_cast<std::uint64_t>(*r.found.largest);
     },
     .label = "largest batch"},
    {.name = "batch_per_step", .unit = Unit::count, .help = "largest_batch x micro-batches per optimizer step",
     .get = [](const Row& r) -> MetricValue {
       if (!r.found.largest) return {};
       return static_cast<std::uint64_t>(*r.found.largest * r.variant.per_step);
     }},
    {.name = "capped", .unit = Unit::text, .help = "yes: the search limit itself fits",
     .get = [](const Row& r) { return yes_no(r.found.capped); }, .in_table = false},
    {.name = "monotone", .unit = Unit::text, .help = "no: a batch below fails or one above fits",
     .get = [](const Row& r) { return yes_no(r.found.monotone); }, .in_table = false},
    {.name = "not_monotone_because", .unit = Unit::text, .help = "the evidence",
     .get = [](const Row& r) -> MetricValue { return r.found.evidence; }},
    {.name = "peak_reserved_bytes", .unit = Unit::bytes, .help = "at the largest batch",
     .get = [](const Row& r) { return at_largest(r, &BatchProbe::peak_reserved); }, .label = "peak reserved"},
    {.name = "peak_allocated_bytes", .unit = Unit::bytes, .help = "at the largest batch",
     .get = [](const Row& r) { return at_largest(r, &BatchProbe::peak_allocated); }, .label = "peak allocated"},
    {.name = "fragmentation_at_peak", .unit = Unit::ratio, .help = "at the largest batch",
     .get = [](const Row& r) -> MetricValue {
       const BatchProbe* at = r.found.at_largest();
       if (!at) return {};
       return at->fragmentation;
     },
     .label = "fragmentation at peak"},
    {.name = "fit_intercept_bytes", .unit = Unit::bytes,
     .help = "peak allocated = intercept + slope x batch, least squares over the batches that ran",
     .get = [](const Row& r) { return fit(r, &LinearFit::intercept); },
     .shown = [](const Row& r) { return mib(fit(r, &LinearFit::intercept)); }},
    {.name = "fit_slope_bytes", .unit = Unit::bytes, .help = "bytes per sample",
     .get = [](const Row& r) { return fit(r, &LinearFit::slope); },
     .shown = [](const Row& r) { return mib(fit(r, &LinearFit::slope)); }},
    {.name = "fit_rms_residual_bytes", .unit = Unit::bytes, .help = "how far the peaks lie from the line",
     .get = [](const Row& r) { return fit(r, &LinearFit::rms_residual); },
     .shown = [](const Row& r) { return mib(fit(r, &LinearFit::rms_residual)); }, .label = "rms residual"},
    {.name = "batches_tried", .unit = Unit::count, .help = "batches the search ran",
     .get = [](const Row& r) -> MetricValue { return std::uint64_t{r.found.probes.size()}; },
     .label = "batches tried"},
}};

// The columns that name a search rather than its answer.
constexpr std::array<std::string_view, 6> kKeyColumns{"workload", "device", "capacity_bytes", "context_bytes", "policy",
                                                      "variant"};

const ModelSpec& maxbatch_model(const WorkloadSpec& workload) {
  const ModelSpec* model = workload.model();
  if (!model) throw Error("maxbatch: workload " + workload.text + " is not a model workload (see `allocsim workloads`)");
  return *model;
}

}  // namespace

std::vector<BatchVariant> batch_variants(const ModelSpec& workload, int accumulation) {
  std::vector<BatchVariant> variants{{}};
  if (workload.options.precision == Precision::fp32) variants.push_back({&model_token("amp")});
  if (workload.generation.given()) return variants;  // a generation has no micro-batches to accumulate
  const ModelToken& acc = model_token("acc");
  variants.push_back({&acc, accumulation, accumulation});
  return variants;
}

MaxBatchResults plan_maxbatch(const MaxBatchStudy& study) {
  MaxBatchResults results;
  results.variants = batch_variants(maxbatch_model(study.workload), study.accumulation);
  for (const DeviceSpec& device : study.devices) {
    for (const PolicyMaker& policy : study.policies) {
      for (const BatchVariant& variant : results.variants) {
        results.rows.push_back(MaxBatchRow{study.workload.text, device, policy, variant, {}, false, {}});
      }
    }
  }
  return results;
}

void search_maxbatch(const MaxBatchStudy& study, MaxBatchResults& results) {
  const ModelSpec& model = maxbatch_model(study.workload);
  std::vector<std::size_t> todo;
  for (std::size_t i = 0; i < results.rows.size(); ++i) {
    if (!results.rows[i].done()) todo.push_back(i);
  }
  // Every search is independent: share them among the threads.
  TraceCache traces;
  parallel_for(todo.size(), study.threads, [&](std::size_t i) {
    MaxBatchRow& row = results.rows[todo[i]];
    try {
      row.found = find_max_batch(
          [&](std::int64_t batch) {
            ModelSpec spec = model;
            if (row.variant.token) set_model_token(spec, *row.variant.token, row.variant.value, study.workload.text);
            set_model_token(spec, model_token("b"), batch, study.workload.text);
            Scenario scenario;
            scenario.device = row.device;
            scenario.tenants.push_back(TenantSpec{traces.get(model_workload(spec), row.device.compute_capability), row.policy, 0});
            return probe(run(scenario), batch);
          },
          study.limit, study.neighbours);
    } catch (const Interrupted&) {
      return;  // a search a signal cut short is one not run; `stop` starts no other
    }
    row.searched = true;
  }, {}, study.stop);
}

MaxBatchResults run_maxbatch(const MaxBatchStudy& study) {
  MaxBatchResults results = plan_maxbatch(study);
  search_maxbatch(study, results);
  return results;
}

void write_maxbatch_csv(std::ostream& out, const MaxBatchResults& results) {
  const std::span<const Column<Row>> columns(kColumns);
  write_csv_header(out, columns);
  for (const MaxBatchRow& row : results.rows) {
    if (row.kept.empty()) {
      write_csv_row(out, columns, row);
    } else {
      out << join_csv(row.kept) << '\n';
    }
  }
}

StudyTable maxbatch_table(const MaxBatchResults& results) {
  const std::span<const Column<Row>> columns(kColumns);
  StudyTable table;
  for (const Column<Row>& column : columns) table.columns.emplace_back(column.name);
  for (const MaxBatchRow& row : results.rows) {
    if (row.done()) table.rows.push_back(row.kept.empty() ? table_cells(columns, row) : row.kept);
  }
  return table;
}

MaxBatchStudy maxbatch_study(const MaxBatchOptions& o) {
  if (o.workload.empty() || o.policies.empty()) throw Error("maxbatch needs --workload MODEL and --policy (see maxbatch --help)");
  refuse_workload_list(o.workload);
  std::optional<ModelSpec> model = parse_model_spec(o.workload);
  if (!model) throw Error("maxbatch: workload " + o.workload + " is not a model workload (see `allocsim workloads`)");
  if (o.limit < 1 || o.limit > 100'000) throw Error("--limit must be 1 to 100000");
  if (o.neighbours < 0 || o.neighbours > 64) throw Error("--neighbours must be 0 to 64");
  if (o.accumulation < 2 || o.accumulation > 1024) throw Error("--accumulation must be 2 to 1024");
  MaxBatchStudy study;
  study.workload = WorkloadSpec{o.workload, std::move(*model)};
  study.policies = policy_makers(o.policies, o.given_policies);  // "all" included, each checked up front
  study.devices = chosen_devices(o.device);
  study.limit = o.limit;
  study.neighbours = o.neighbours;
  study.accumulation = o.accumulation;
  study.threads = thread_count(o.threads);
  return study;
}

std::span<const Column<MaxBatchRow>> maxbatch_columns() { return kColumns; }

std::size_t maxbatch_column(std::string_view name) {
  for (std::size_t c = 0; c < kColumns.size(); ++c) {
    if (kColumns[c].name == name) return c;
  }
  throw Error("maxbatch: no CSV column " + std::string(name));
}

std::size_t read_maxbatch_csv(std::istream& in, MaxBatchResults& results, const std::string& name) {
  std::vector<std::string> expected;
  for (const Column<Row>& column : kColumns) expected.emplace_back(column.name);
  std::vector<std::string> header;
  if (!read_resume_header(in, expected, false, header,
                          "--resume: " + name + " was not written by allocsim maxbatch (its header differs)")) {
    return 0;
  }
  // A row is the search of its workload, device (and its memory), policy and variant.
  std::vector<std::size_t> key;
  for (const std::string_view column : kKeyColumns) key.push_back(maxbatch_column(column));
  const auto key_of = [&](const std::vector<std::string>& cells) {
    std::vector<std::string> cells_of_key;
    for (const std::size_t c : key) cells_of_key.push_back(cells[c]);
    return cells_of_key;
  };
  std::map<std::vector<std::string>, std::size_t> row_of;
  for (std::size_t i = 0; i < results.rows.size(); ++i) {
    std::vector<std::string> cells;
    for (const std::size_t c : key) cells.push_back(format_plain(kColumns[c].get(results.rows[i])));
    row_of.emplace(std::move(cells), i);
  }

  std::size_t kept = 0;
  std::vector<std::string> cells;
  bool complete = false;
  for (std::size_t line = 2; read_csv_record(in, cells, complete); ++line) {
    if (!complete) break;  // the line an interrupted write left
    const std::string where = "--resume: " + name + ":" + std::to_string(line) + ": ";
    if (cells.size() != header.size()) throw Error(where + "wrong number of cells");
    const auto found = row_of.find(key_of(cells));
    if (found == row_of.end()) {
      throw Error(where + "workload " + cells[key[0]] + ", device " + cells[key[1]] + ", policy " + cells[key[4]] +
                  ", variant " + cells[key[5]] + " is no search of this maxbatch (were the options changed?)");
    }
    MaxBatchRow& row = results.rows[found->second];
    if (row.kept.empty()) {  // a row written twice: the first counts
      row.kept = cells;
      ++kept;
    }
  }
  return kept;
}

}  // namespace allocsim
