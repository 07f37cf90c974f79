// `allocsim compare --workload W --policy a,b,c`: one workload through each policy, alone
// on the device, in one table (a column per policy), with an optional HTML report.
#include <memory>
#include <string>
#include <vector>

#include <boost/program_options.hpp>

#include "app/alloc_conf_option.hpp"
#include "app/commands.hpp"
#include "app/device_options.hpp"
#include "app/parse_options.hpp"
#include "policies/registry.hpp"
#include "sim/atomic_file.hpp"
#include "sim/error.hpp"
#include "sim/output_paths.hpp"
#include "sim/report.hpp"
#include "sim/version.hpp"
#include "studies/compare.hpp"
#include "studies/report_page.hpp"
#include "studies/run_report.hpp"
#include "studies/scenario_choice.hpp"
#include "studies/sweep_grid.hpp"
#include "workloads/catalogue.hpp"

namespace allocsim {
namespace {

namespace po = boost::program_options;

constexpr const char* kCompareUsage = R"(allocsim compare: one workload through several policies, side by side.

Usage:
  allocsim compare --workload SPEC --policy SPECS [--device NAME | --capacity SIZE] [--report FILE.html] [--csv FILE]

Each policy of SPECS (comma separated; a spec keeps its own commas, as sweep reads them) replays
the workload alone on its own copy of the device. The table has a column per policy, as `run`
has one per tenant; every verdict line begins with the policy. --report writes one
self-contained HTML page (it opens offline): bytes over time of every policy on the same axes,
each policy's memory map (address x time), its OOMs, and what was alive at its peak.

Examples:
  allocsim compare --workload resnet50_b64 --policy bfc,growth,caching --device v100-16gb --report compare.html
  allocsim compare --workload workloads/traces/seed_fragmentation.csv --policy bfc,direct --capacity 10GiB
)";

struct CompareCliOptions {
  CompareOptions compare;
  std::string alloc_conf;
  std::string csv;
  std::string report;
};

po::options_description compare_options(CompareCliOptions& o) {
  po::options_description description("Options");
  CompareOptions& c = o.compare;
  description.add_options()
      ("help,h", "this help")
      ("workload,w", po::value(&c.workload)->value_name("SPEC"), "the workload, one spec (its commas its own; see `allocsim workloads`) or a trace file")
      ("policy,p", po::value(&c.policies)->value_name("SPECS")->composing(),
       "the policies to compare, comma separated (repeatable; see `allocsim policies`)")
      ("on-oom", po::value(&c.on_oom)->value_name("stop|continue"), "what an OOM does (default stop)")
      ("csv", po::value(&o.csv)->value_name("FILE"), "one CSV row per policy (the columns of run --csv)")
      ("report", po::value(&o.report)->value_name("FILE.html"), "a self-contained HTML page of the comparison");
  add_alloc_conf_option(description, o.alloc_conf);
  add_device_options(description, c.device, DeviceLists::one, true);
  return description;
}

void print_comparison(std::ostream& out, const CompareCliOptions& o, const CompareStudy& study, const Comparison& comparison) {
  const DeviceSpec& device = study.device;
  out << "device " << device.name << ": " << format_bytes(device.capacity) << ", context "
      << format_bytes(device.context_overhead) << ", granularity " << format_bytes(device.granularity) << '\n';
  write_table(out, comparison.runs, comparison.policies);
  if (!o.csv.empty()) write_file_atomically(o.csv, [&](std::ostream& file) { write_study_csv(file, compare_table(comparison.runs)); });
  if (!o.report.empty()) {
    const std::vector<ReportedRun> reported = comparison.reported();
    const std::string title = "allocsim compare: " + o.compare.workload + " on " + device.name;
    write_report_page(o.report, title, run_report_data(title, command_text(command_line()), reported));
  }
}

}  // namespace

int compare_command(std::span<const std::string> args, std::ostream& out) {
  CompareCliOptions o;
  const po::options_description description = compare_options(o);
  const po::variables_map values = parse_options(args, description);
  if (values.count("help")) {
    out << kCompareUsage << '\n' << description << '\n';
    return 0;
  }
  append_alloc_conf(o.compare.policies, o.compare.given_policies, o.alloc_conf, out);
  o.compare.record = !o.report.empty();
  const CompareStudy study = compare_study(o.compare);
  OutputPaths paths;
  if (const FileChoice* file = study.workload.file()) paths.input("--workload", file->path);
  paths.input("--device-profile", o.compare.device.cost_profile);
  paths.output("--csv", o.csv);
  paths.output("--report", o.report);
  paths.check();
  print_comparison(out, o, study, run_compare(study));
  return 0;
}

}  // namespace allocsim
