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

struct CompareOptions {
  std::string workload;
  std::vector<std::string> policies;
  DeviceChoice device;
  std::string on_oom = "stop";
  std::string csv;
  std::string report;
};

}  // namespace

int compare_command(std::span<const std::string> args, std::ostream& out) {
  CompareOptions options;
  po::options_description description("Options");
  description.add_options()
      ("help,h", "this help")
      ("workload,w", po::value(&options.workload)->value_name("SPEC"), "the workload, one spec (its commas its own; see `allocsim workloads`) or a trace file")
      ("policy,p", po::value(&options.policies)->value_name("SPECS")->composing(),
       "the policies to compare, comma separated (repeatable; see `allocsim policies`)")
      ("on-oom", po::value(&options.on_oom)->value_name("stop|continue"), "what an OOM does (default stop)")
      ("csv", po::value(&options.csv)->value_name("FILE"), "one CSV row per policy (the columns of run --csv)")
      ("report", po::value(&options.report)->value_name("FILE.html"), "a self-contained HTML page of the comparison");
  std::string alloc_conf;
  add_alloc_conf_option(description, alloc_conf);
  add_device_options(description, options.device, DeviceLists::one, true);
  const po::variables_map values = parse_options(args, description);
  if (values.count("help")) {
    out << kCompareUsage << '\n' << description << '\n';
    return 0;
  }
  append_alloc_conf(options.policies, alloc_conf, out);
  if (options.workload.empty()) throw Error("compare needs --workload SPEC (see --help)");
  const WorkloadSpec workload = parse_workload_spec(options.workload);
  if (options.policies.empty()) throw Error("compare needs --policy SPECS, e.g. --policy bfc,growth,caching");
  std::vector<std::string> policies;
  for (const std::string& list : options.policies) {
    for (std::string& policy : split_list(list, "--policy")) policies.push_back(std::move(policy));
  }
  const OnOom on_oom = parse_on_oom(options.on_oom);
  OutputPaths paths;
  if (const FileChoice* file = workload.file()) paths.input("--workload", file->path);
  paths.input("--device-profile", options.device.cost_profile);
  paths.output("--csv", options.csv);
  paths.output("--report", options.report);
  paths.check();
  const DeviceSpec device = chosen_device(options.device);
  std::vector<PolicyMaker> makers;  // read before a long trace load
  for (const std::string& policy : policies) makers.push_back(policy_maker(policy));
  const auto trace = std::make_shared<const Trace>(load_workload(workload, LoadOptions{std::nullopt, device.compute_capability}));
  const Comparison comparison = compare_policies(trace, device, makers, on_oom, !options.report.empty());

  out << "device " << device.name << ": " << format_bytes(device.capacity) << ", context "
      << format_bytes(device.context_overhead) << ", granularity " << format_bytes(device.granularity) << '\n';
  write_table(out, comparison.runs, comparison.policies);
  if (!options.csv.empty()) write_file_atomically(options.csv, [&](std::ostream& file) { write_csv(file, comparison.runs); });
  if (!options.report.empty()) {
    const std::vector<ReportedRun> reported = comparison.reported();
    const std::string title = "allocsim compare: " + options.workload + " on " + device.name;
    write_report_page(options.report, title, run_report_data(title, command_text(command_line()), reported));
  }
  return 0;
}

}  // namespace allocsim
