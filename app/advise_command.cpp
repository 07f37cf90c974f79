// `allocsim advise`: what to change so that a workload fits, each answer a run.
#include <algorithm>
#include <optional>
#include <span>
#include <string_view>
#include <thread>

#include <boost/program_options.hpp>

#include "app/alloc_conf_option.hpp"
#include "app/commands.hpp"
#include "app/device_options.hpp"
#include "app/parse_options.hpp"
#include "policies/registry.hpp"
#include "sim/atomic_file.hpp"
#include "sim/csv_columns.hpp"
#include "sim/error.hpp"
#include "sim/metrics.hpp"
#include "sim/output_paths.hpp"
#include "studies/advise.hpp"
#include "workloads/catalogue.hpp"

namespace allocsim {
namespace {

namespace po = boost::program_options;

constexpr const char* kAdviseUsage = R"(allocsim advise: what to change so that a workload fits, answered by simulation.

Usage:
  allocsim advise --workload SPEC [--framework tf|torch] [--policy SPEC] [--ranks N]
                  [--device NAME | --capacity SIZE] [--tenant WORKLOAD@POLICY[@start=TIME] ...]
                  [--csv FILE]

Examples:
  allocsim advise --workload resnet50_b256 --framework tf --device v100-16gb
  allocsim advise --workload resnet50_tf_b32 --policy growth --device v100-16gb --tenant resnet50_tf_b64@bfc
  allocsim advise --workload workloads/traces/seed_fragmentation.csv --framework tf --capacity 10GiB
  allocsim advise --workload llama2_7b_b4_bf16_adamw --device a100-80gb --ranks 8

It runs the workload as it is, under --policy or the framework's default allocator
(TensorFlow: bfc; PyTorch: caching), with the other tenants as given, then one change at a
time:
  allocator settings   tf: memory growth, memory_limit (the smallest that fits; in place of
                       memory growth, which TensorFlow does not take beside it), the system
                       reserve TF_DEVICE_MIN_SYS_MEMORY_IN_MB (the largest that fits);
                       torch: expandable segments, max_split_size_mb:128,
                       garbage_collection_threshold:0.8, set_per_process_memory_fraction
                       (the smallest that fits)
  another tenant       memory growth, memory_limit or a memory fraction for it (the smallest
                       with which it still runs); each tenant otherwise as given (its
                       policy, its start)
  every process        with two or more: memory growth in every TensorFlow process, a
                       memory limit per process (memory_limit, a memory fraction; each the
                       smallest with which it runs alone, so that they sum under the card),
                       TF_GPU_ALLOCATOR=cuda_malloc_async in every TensorFlow process
  the model            amp, bf16 (compute capability 8.0 and later), half the batch,
                       gradient accumulation to the same effective batch (2 and 4 steps),
                       inference only, a smaller optimizer state (Adam -> SGD with momentum,
                       momentum -> plain SGD), activation checkpointing where the zoo models it
  a decoder (LLM)      fused AdamW, paged AdamW (32-bit state), 8-bit and paged 8-bit AdamW
                       (bitsandbytes), LoRA and QLoRA (PEFT), ZeRO-1/2/3 and FSDP over
                       --ranks N, a paged KV cache for a generation
A trace (not a model) gets the allocator and tenant changes only. When no single change
that keeps the training fits, two at a time are tried too: each setting with each model
change, and two model changes of different tokens (amp with accumulation); such a line
ranks by its larger impact.

Each line is one run of exactly the specs it shows: `allocsim run --workload W --policy P
--tenant ...` with the same device replays it. A limit is found by bisection and the line is
the run at the value found. A line fits when every tenant runs its whole trace. Ranking: what
fits first; then what keeps the training the same (the same model, numerics and global
batch: settings, a fused or paged optimizer, checkpointing, accumulation, sharding) before
what changes it (precision, another optimizer, LoRA, a smaller batch, inference), each
group labelled; within a group what changes least for the user (a setting; another kernel;
the training loop; sharding; paged optimizer state | precision; the optimizer; adapters; a
smaller batch; inference only), then the most headroom (device capacity less the device at
its fullest, every tenant and context included). What does not fit is listed with its
verdict.

--framework picks whose allocators and spellings are tried (tf: tf.config calls and
TensorFlow's environment; torch: PYTORCH_CUDA_ALLOC_CONF and torch calls) and lowers a model
workload the way that framework runs it (its `tf` or `torch` token); without it, the
workload's own framework token decides (PyTorch when it names none).
)";

struct AdviseCliOptions {
  AdviseOptions study;
  std::string csv;
};

std::string as_run(const AdviseCandidate& candidate) {
  std::string text = candidate.workload.text + " @ " + candidate.policy.text;
  for (const TenantChoice& tenant : candidate.tenants) text += " + " + to_string(tenant);  // as --tenant takes it
  return text;
}

// Rows of cells, each column padded to its widest cell; the last column is left unpadded. A
// row of one cell is a heading, written as it is.
void write_grid(std::ostream& out, const std::vector<std::vector<std::string>>& rows) {
  std::vector<std::size_t> widths;
  for (const auto& row : rows) {
    if (row.size() == 1) continue;
    widths.resize(std::max(widths.size(), row.size()), 0);
    for (std::size_t c = 0; c < row.size(); ++c) widths[c] = std::max(widths[c], row[c].size());
  }
  for (const auto& row : rows) {
    if (row.size() == 1) {
      out << row.front() << '\n';
      continue;
    }
    std::string line;
    for (std::size_t c = 0; c < row.size(); ++c) {
      const bool last = c + 1 == row.size();
      const std::string pad(widths[c] - row[c].size(), ' ');
      line += (c > 0 ? "  " : "") + (last ? row[c] : pad + row[c]);
    }
    out << line << '\n';
  }
}

// A field of a line as the terminal shows it: its column's text (studies/advise.cpp), after
// its label where a sentence names it.
std::string cell(const AdviseRow& row, std::string_view name) {
  return column_text(find_column(advise_columns(), name), row);
}

std::string labelled(const AdviseRow& row, std::string_view name) {
  const Column<AdviseRow>& column = find_column(advise_columns(), name);
  return std::string(column_label(column)) + " " + column_text(column, row);
}

// A group's heading: what the changes under it do to the job.
std::string heading(Group group, bool training) {
  if (group == Group::keeps_training) {
    return training ? "Keeps the training the same (the same model, numerics and global batch):"
                    : "Keeps the results the same:";
  }
  return training ? "Changes the training:" : "Changes the results:";
}

po::options_description advise_options(AdviseCliOptions& c) {
  AdviseOptions& o = c.study;
  po::options_description description("Options");
  description.add_options()
      ("help,h", "this help")
      ("workload,w", po::value(&o.workload)->value_name("SPEC"),
       "the workload to make fit, one spec (its commas its own): a model (see `allocsim workloads`) or a trace")
      ("framework", po::value(&o.framework)->value_name("tf|torch"),
       "whose allocators and settings to try (default: the workload's framework token)")
      ("policy,p", po::value(&o.policy)->value_name("SPEC"),
       "the allocator the program runs with now, one of its framework's (default: the framework's default)")
      ("tenant,t", po::value(&o.tenants)->value_name("WORKLOAD@POLICY[@start=TIME]")->composing(),
       "another process on the same device, after the workload, starting at TIME (default 0); repeat for several")
      ("ranks", po::value(&o.ranks)->value_name("N"),
       "the GPUs the job runs on, each rank this workload: ZeRO and FSDP are tried over them (default 1)")
      ("csv", po::value(&c.csv)->value_name("FILE"), "also every line as a CSV row (as it is first, then by rank)")
      ("threads,j", po::value(&o.threads)->value_name("N"), "threads (default: every core)");
  add_alloc_conf_option(description, o.alloc_conf);
  add_device_options(description, o.device, DeviceLists::one, true);
  return description;
}

void print_as_is(std::ostream& out, const AdviseResults& results, std::size_t tenants) {
  const AdviseRow as_is{&results, &results.as_is, 0};
  out << "advise " << results.workload << " on " << cell(as_is, "device") << " (" << cell(as_is, "capacity_bytes")
      << ", context " << format_bytes(results.device.context_overhead) << "), "
      << (results.framework == Framework::tf ? "TensorFlow" : "PyTorch") << " settings";
  if (tenants > 0) out << ", tenants after it: " << tenants;
  out << '\n';
  out << "as it is (" << as_run(as_is.line->candidate) << "): ";
  if (as_is.line->fits) {
    out << "fits; " << labelled(as_is, "peak_allocated_bytes") << ", " << labelled(as_is, "headroom_bytes") << '\n';
  } else {
    out << "does not fit\n  " << cell(as_is, "verdict") << '\n';
  }
}

// The lines that fit, ranked and grouped (a heading per group), a column each of the
// table's (advise_table_columns), the change and the run under `what`; the others apart.
struct AdviseGrid {
  std::vector<std::vector<std::string>> rows;
  std::vector<AdviseRow> misses;
  std::size_t pairs_missed = 0;  // pairs that do not fit are in the CSV, not in the terminal
  std::size_t fitting = 0;
};

AdviseGrid advise_grid(const AdviseResults& results) {
  const std::vector<Column<AdviseRow>> columns = advise_table_columns();
  AdviseGrid grid;
  grid.rows.push_back(column_labels<AdviseRow>(columns));
  const auto under_last = [&](std::string text) {
    std::vector<std::string> row(columns.size() - 1);
    row.push_back(std::move(text));
    grid.rows.push_back(std::move(row));
  };
  std::optional<Group> group;  // of the fitting line before
  const std::vector<AdviseRow> rows = advise_rows(results);
  for (const AdviseRow& row : std::span(rows).subspan(1)) {  // the ranked lines, after the program as it is
    const AdviseLine& line = *row.line;
    if (!line.fits) {
      if (line.candidate.changes > 1) {
        ++grid.pairs_missed;
      } else {
        grid.misses.push_back(row);
      }
      continue;
    }
    ++grid.fitting;  // what fits ranks first: its rank counts the lines that fit
    if (group_of(line.candidate.impact) != group) {
      group = group_of(line.candidate.impact);
      grid.rows.push_back({heading(*group, results.training)});
    }
    grid.rows.push_back(column_texts<AdviseRow>(columns, row));
    under_last("  " + cell(row, "change"));
    under_last("  as run: " + as_run(line.candidate));
  }
  return grid;
}

void print_advice(std::ostream& out, const AdviseResults& results) {
  const AdviseGrid grid = advise_grid(results);
  const bool training = results.training;
  out << '\n';
  if (results.pairs_tried) {
    out << "No single change that keeps the " << (training ? "training" : "results")
        << " the same fits; two at a time were tried too.\n";
  }
  if (grid.fitting == 0) {
    out << "Nothing tried fits" << (results.pairs_tried ? ", two changes at a time included" : "") << ".\n";
  } else {
    out << "What fits, ranked (what keeps the " << (training ? "training" : "results")
        << " the same first, then the least change for the user, then headroom):\n";
    write_grid(out, grid.rows);
  }
  if (!grid.misses.empty()) {
    out << "\nWhat does not fit:\n";
    for (const AdviseRow& row : grid.misses) {
      out << "  " << cell(row, "what") << " (" << as_run(row.line->candidate) << "): " << cell(row, "verdict") << '\n';
    }
  }
  if (grid.pairs_missed > 0) out << "  and " << grid.pairs_missed << " pairs of changes (in --csv, each with its verdict)\n";
  if (!results.not_tried.empty()) {
    out << "\nNot tried:\n";
    for (const AdviseNote& note : results.not_tried) out << "  " << note.what << ": " << note.why << '\n';
  }
  out << "\nEach line is one run: allocsim run --workload W --policy P [--tenant W@P ...] on the same device replays it.\n";
}

}  // namespace

int advise_command(std::span<const std::string> args, std::ostream& out) {
  AdviseCliOptions o;
  const po::options_description description = advise_options(o);
  const po::variables_map values = parse_options(args, description);
  if (values.count("help")) {
    out << kAdviseUsage << '\n' << description << '\n';
    return 0;
  }
  const AdviseStudy study = advise_study(o.study, out);
  OutputPaths paths;
  if (const FileChoice* file = study.workload.file()) paths.input("--workload", file->path);
  for (const TenantChoice& tenant : study.tenants) {
    if (const FileChoice* file = tenant.workload.file()) paths.input("--tenant", file->path);
  }
  paths.output("--csv", o.csv);
  paths.check();
  const AdviseResults results = run_advise(study);
  print_as_is(out, results, study.tenants.size());
  print_advice(out, results);
  if (!o.csv.empty()) write_file_atomically(o.csv, [&](std::ostream& file) { write_advise_csv(file, results); });
  return 0;
}

}  // namespace allocsim
