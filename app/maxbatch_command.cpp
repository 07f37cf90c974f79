#include <algorithm>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
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
#include "sim/interrupt.hpp"
#include "sim/metrics.hpp"
#include "sim/output_paths.hpp"
#include "sim/report.hpp"
#include "sim/version.hpp"
#include "studies/batch_report.hpp"
#include "studies/maxbatch_study.hpp"
#include "studies/report_page.hpp"
#include "studies/scenario_choice.hpp"
#include "workloads/catalogue.hpp"
#include "workloads/model/model_spec.hpp"

namespace allocsim {
namespace {

namespace po = boost::program_options;

constexpr const char* kMaxBatchUsage = R"(allocsim maxbatch: the largest batch of a model workload that runs without OOM, per policy.

Usage:
  allocsim maxbatch --workload MODEL --policy SPECS [--device NAMES | --capacity SIZE] [--csv FILE] [options]

Example:
  allocsim maxbatch --workload resnet50 --policy bfc,growth,caching --device v100-16gb

For each policy: the search doubles the batch to the first OOM, bisects, then tries the
neighbours on each side; an OOM below the answer or a fit above it is reported as "not
monotone". Then the peak and fragmentation at that batch, a least-squares line through the
peaks of every batch that ran (peak allocated = a + b x batch, with its residual), and the
same search with amp and with gradient accumulation (batch per micro-batch x micro-batches).
Every batch replays the warm-up step and one steady-state step (optimizer state exists,
kept gradients persist), so the answer is the largest batch that survives iteration 2 and
on; give the workload steps1 for the first step alone.
^C (SIGINT) or SIGTERM stops between searches: those that finished are written to --csv,
and the same command with --resume runs the rest. --resume keeps the rows already in
--csv FILE as they are and runs only the searches missing there; it refuses a file that
is not this maxbatch's CSV (another command's, or another workload, device, policy or
variant), leaving it untouched. --limit and --neighbours are not in the CSV: resume with
the values it was written with.
)";

struct MaxBatchCliOptions {
  MaxBatchOptions study;
  std::string alloc_conf;
  std::string csv;
  std::string report;
  bool resume = false;
};

// A field of a search as the terminal shows it: its column's text (studies/maxbatch_study.cpp),
// and its label where the sentence names it.
std::string cell(const MaxBatchRow& row, std::string_view name) {
  return column_text(find_column(maxbatch_columns(), name), row);
}

std::string label(std::string_view name) { return std::string(column_label(find_column(maxbatch_columns(), name))); }

std::string labelled(const MaxBatchRow& row, std::string_view name) { return label(name) + " " + cell(row, name); }

void describe(std::ostream& out, const MaxBatchRow& row, std::int64_t limit) {
  const MaxBatch& found = row.found;
  out << "policy " << cell(row, "policy") << ": ";
  if (!found.largest) {
    out << "not even batch 1 fits";
    if (!found.probes.empty()) out << " (" << found.probes.front().failure << ")";
    out << '\n';
    return;
  }
  out << labelled(row, "largest_batch");
  if (found.capped) {
    out << " (the search limit; raise --limit)";
  } else {
    for (const BatchProbe& probe : found.probes) {
      if (probe.batch == *found.largest + 1) out << "; " << probe.batch << " runs out of memory (" << probe.failure << ")";
    }
  }
  out << '\n';
  out << "  at batch " << cell(row, "largest_batch") << ": " << labelled(row, "peak_reserved_bytes") << ", "
      << labelled(row, "peak_allocated_bytes") << ", " << labelled(row, "fragmentation_at_peak") << '\n';
  if (const auto fit = fit_peak(found.probes, &BatchProbe::peak_allocated)) {
    out << "  fit over " << fit->points << " batches that ran: " << label("peak_allocated_bytes") << " = "
        << cell(row, "fit_intercept_bytes") << " + " << cell(row, "fit_slope_bytes") << " x batch, "
        << labelled(row, "fit_rms_residual_bytes");
    const DeviceSpec& device = row.device;
    const double usable = static_cast<double>(device.capacity - std::min(device.capacity, device.context_overhead));
    if (fit->slope > 0) {
      out << "; the line reaches " << format_bytes(static_cast<Bytes>(usable)) << " at batch "
          << static_cast<std::int64_t>((usable - fit->intercept) / fit->slope);
    }
    out << '\n';
  }
  out << "  " << (found.monotone ? "monotone around the answer" : "NOT monotone: " + cell(row, "not_monotone_because"))
      << " (" << cell(row, "batches_tried") << " " << label("batches_tried") << ", up to " << limit << ")\n";
}

// A search kept by --resume: its answer as the CSV gives it (the probes are not there).
std::string kept_from(const MaxBatchRow& row, const std::string& csv) {
  const std::string& largest = row.kept.at(maxbatch_column("largest_batch"));
  std::string text = "kept from " + csv + ": ";
  if (largest.empty()) return text + "not even batch 1 fits";
  text += "largest batch " + largest;
  if (row.kept.at(maxbatch_column("capped")) == "yes") text += "+";
  if (row.variant.per_step > 1) text += " per micro-batch, " + row.kept.at(maxbatch_column("batch_per_step")) + " per optimizer step";
  return text;
}

po::options_description maxbatch_options(MaxBatchCliOptions& c) {
  MaxBatchOptions& o = c.study;
  po::options_description description("Options");
  description.add_options()
      ("help,h", "this help")
      ("workload,w", po::value(&o.workload)->value_name("MODEL"),
       "one model workload spec, commas and all: resnet50, bert_base_s512_adam, llama2_7b_bf16:qlora=64,ckpt")
      ("policy,p", po::value(&o.policies)->value_name("SPECS")->composing(), "policy specs, or all (repeatable)")
      ("limit", po::value(&o.limit)->value_name("N"), "the largest batch tried (default 65536)")
      ("neighbours", po::value(&o.neighbours)->value_name("N"), "batches checked on each side of the answer (default 4)")
      ("accumulation", po::value(&o.accumulation)->value_name("N"), "micro-batches per step for the accumulation line (default 4)")
      ("csv", po::value(&c.csv)->value_name("FILE"), "also a CSV row per device, policy and variant (written whole)")
      ("report", po::value(&c.report)->value_name("FILE.html"),
       "a self-contained HTML page: peak bytes against the batch per policy, the device line, each largest batch")
      ("resume", po::bool_switch(&c.resume), "keep the searches already in --csv FILE, run only the others")
      ("threads,j", po::value(&o.threads)->value_name("N"), "threads (default: every core)");
  add_alloc_conf_option(description, c.alloc_conf);
  add_device_options(description, o.device, DeviceLists::many, false);
  return description;
}

// The searches not kept from --csv, until ^C or a kill: then the finished ones are written
// to --csv and the command stops.
MaxBatchResults search(MaxBatchStudy& study, const MaxBatchCliOptions& o) {
  MaxBatchResults results = plan_maxbatch(study);
  if (o.resume && std::filesystem::exists(o.csv)) {
    std::ifstream in(o.csv, std::ios::binary);
    if (!in) throw Error("--resume: cannot read " + o.csv);
    read_maxbatch_csv(in, results, o.csv);
  }
  catch_interrupts();
  clear_interrupt();
  study.stop = [] { return interrupt_signal() != 0; };
  search_maxbatch(study, results);
  if (const int signal = interrupt_signal();
      signal && std::any_of(results.rows.begin(), results.rows.end(), [](const MaxBatchRow& row) { return !row.done(); })) {
    const std::size_t total = results.rows.size();
    std::erase_if(results.rows, [](const MaxBatchRow& row) { return !row.done(); });
    std::string message = std::string("interrupted by ") + signal_name(signal) + ": " + std::to_string(results.rows.size()) +
                          " of " + std::to_string(total) + " searches finished";
    if (o.csv.empty()) throw Interrupted(signal, message + "; with --csv FILE, --resume would run the rest");
    write_file_atomically(o.csv, [&](std::ostream& file) { write_maxbatch_csv(file, results); });
    throw Interrupted(signal, message + ", written to " + o.csv + "; the same command with --resume runs the rest");
  }
  return results;
}

// The variants of one device and policy, after the line of the workload as given.
void describe_variants(std::ostream& out, const MaxBatchResults& results, std::size_t first, const std::string& csv) {
  for (std::size_t v = 1; v < results.variants.size(); ++v) {
    const MaxBatchRow& row = results.rows[first + v];
    const MaxBatch& result = row.found;
    out << "  with " << cell(row, "variant") << ": ";
    if (!row.kept.empty()) {
      out << kept_from(row, csv) << '\n';
      continue;
    }
    if (!result.largest) {
      out << "not even batch 1 fits\n";
      continue;
    }
    out << labelled(row, "largest_batch") << (result.capped ? "+" : "");
    if (row.variant.per_step > 1) out << " per micro-batch, " << cell(row, "batch_per_step") << " per optimizer step";
    if (!result.monotone) out << " (not monotone: " << cell(row, "not_monotone_because") << ")";
    out << '\n';
  }
}

void print_results(std::ostream& out, const MaxBatchResults& results, std::size_t policies, const MaxBatchCliOptions& o) {
  const std::size_t variants = results.variants.size();
  for (std::size_t first = 0; first < results.rows.size(); first += variants) {
    const MaxBatchRow& as_given = results.rows[first];
    if (first % (variants * policies) == 0) {
      out << (first > 0 ? "\n" : "") << "workload " << cell(as_given, "workload") << " on " << cell(as_given, "device")
          << " (" << cell(as_given, "capacity_bytes") << ", " << labelled(as_given, "context_bytes") << ")\n";
    }
    if (as_given.kept.empty()) {
      describe(out, as_given, o.study.limit);
    } else {
      out << "policy " << cell(as_given, "policy") << ": " << kept_from(as_given, o.csv) << '\n';
    }
    describe_variants(out, results, first, o.csv);
  }
}

}  // namespace

int maxbatch_command(std::span<const std::string> args, std::ostream& out) {
  MaxBatchCliOptions o;
  const po::options_description description = maxbatch_options(o);
  const po::variables_map values = parse_options(args, description);
  if (values.count("help")) {
    out << kMaxBatchUsage << '\n' << description << '\n';
    return 0;
  }
  append_alloc_conf(o.study.policies, o.study.given_policies, o.alloc_conf, out);
  MaxBatchStudy study = maxbatch_study(o.study);
  if (o.resume && o.csv.empty()) throw Error("--resume needs --csv FILE to resume from");
  OutputPaths paths;  // the --resume file is the output itself, read first
  paths.output("--csv", o.csv);
  paths.output("--report", o.report);
  paths.check();
  const MaxBatchResults results = search(study, o);
  print_results(out, results, study.policies.size(), o);
  if (!o.csv.empty()) write_file_atomically(o.csv, [&](std::ostream& file) { write_maxbatch_csv(file, results); });
  if (!o.report.empty()) {
    const std::string title = "allocsim maxbatch: " + o.study.workload;
    write_report_page(o.report, title, batch_report_data(title, command_text(command_line()), batch_report_from_maxbatch(results)));
  }
  return 0;
}

}  // namespace allocsim
