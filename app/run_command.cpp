// `allocsim [run]`: one scenario (a device, one or more tenants) replayed and reported.
#include <algorithm>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <boost/program_options.hpp>

#include "app/alloc_conf_option.hpp"
#include "app/commands.hpp"
#include "app/device_options.hpp"
#include "app/parse_options.hpp"
#include "policies/registry.hpp"
#include "sim/atomic_file.hpp"
#include "sim/engine.hpp"
#include "sim/error.hpp"
#include "sim/output_paths.hpp"
#include "sim/report.hpp"
#include "sim/timeline.hpp"
#include "sim/version.hpp"
#include "studies/replay_from_recording.hpp"
#include "studies/report_page.hpp"
#include "studies/run_exports.hpp"
#include "studies/run_report.hpp"
#include "studies/run_scenario.hpp"
#include "studies/scenario_choice.hpp"
#include "workloads/atrace.hpp"
#include "workloads/catalogue.hpp"
#include "workloads/csv_trace.hpp"
#include "workloads/model/model_spec.hpp"
#include "workloads/torch_recording.hpp"

namespace allocsim {
namespace {

namespace po = boost::program_options;

struct RunOptions {
  std::string workload;
  std::string policy;
  std::string alloc_conf;
  std::vector<std::string> tenants;
  DeviceChoice device;
  std::string on_oom = "stop";
  std::string csv;
  std::string json;
  std::string timeline;
  std::string report;
  std::string save_trace;
  std::string memory_viz;
  std::string chrome_trace;
  std::int64_t batch = 0;
  std::optional<int> cuda_device;
  bool check = false;
  bool stream = false;
};

po::options_description run_options(RunOptions& options) {
  po::options_description description("Options");
  description.add_options()
      ("help,h", "this help")
      ("workload,w", po::value(&options.workload)->value_name("SPEC"),
       "what to replay, one spec (its commas its own): a generator or model spec (see `allocsim workloads`) or a "
       "trace .csv")
      ("policy,p", po::value(&options.policy)->value_name("SPEC"),
       "the allocator: name[:key=value,...] (see `allocsim policies`)")
      ("tenant,t", po::value(&options.tenants)->value_name("WORKLOAD@POLICY[@start=TIME]")->composing(),
       "one more process on the same device, with its own CUDA context; repeat for several. start=TIME "
       "(0, 500ms, 2s) is when it starts: TensorFlow's bfc takes what is free then, so the order matters")
      ("on-oom", po::value(&options.on_oom)->value_name("stop|continue"),
       "stop: the tenant crashes at its first OOM (default); continue: count the OOM, skip the request")
      ("csv", po::value(&options.csv)->value_name("FILE"), "one CSV row per tenant (columns in docs/outputs.md)")
      ("json", po::value(&options.json)->value_name("FILE"), "the results and every OOM as JSON")
      ("timeline", po::value(&options.timeline)->value_name("FILE"),
       "allocated and reserved bytes over simulated time, as CSV")
      ("memory-viz", po::value(&options.memory_viz)->value_name("FILE"),
       "the run as a PyTorch memory snapshot (pickle) that pytorch.org/memory_viz opens and replay-check "
       "reads; each tenant is one device of it (see docs/export.md)")
      ("chrome-trace", po::value(&options.chrome_trace)->value_name("FILE.json"),
       "the run as Chrome trace JSON for ui.perfetto.dev or chrome://tracing: a process per tenant, "
       "byte counters, the 20000 largest allocations as slices, OOMs as instants")
      ("report", po::value(&options.report)->value_name("FILE.html"),
       "a self-contained HTML page (opens offline): bytes over time, the memory map, the OOMs, the peak")
      ("batch,b", po::value(&options.batch)->value_name("N"), "the batch of every model workload (as its _bN token)")
      ("save-trace", po::value(&options.save_trace)->value_name("FILE"),
       "write the workload's trace (one tenant): FILE.atrace in the binary format (16 B/event, replays "
       "memory-mapped), any other name as CSV, e.g. to see what a model step allocates")
      ("stream", po::bool_switch(&options.stream),
       "replay a .atrace or CSV file or the random generator without loading the trace: memory for the live "
       "allocations only (a 1e9-event trace in under 1 GiB); optimal, which plans over the whole trace, refuses. "
       "Without it a trace file is loaded whole, on a thread of its own while the replay runs what is read")
      ("cuda-device", po::value<int>()->value_name("N")->notifier([&](int n) { options.cuda_device = n; }),
       "a PyTorch snapshot's device to replay (default: the only one with a trace)")
      ("check", po::bool_switch(&options.check), "check every invariant after every event (slow)");
  add_alloc_conf_option(description, options.alloc_conf);
  add_device_options(description, options.device, DeviceLists::one, true);
  return description;
}

// `conf_policy`: --alloc-conf's, read (alloc_conf_instead); else --policy is read here, once
// the options are known to go together.
std::vector<TenantChoice> tenant_specs(const RunOptions& options, std::optional<PolicySpec> conf_policy) {
  std::vector<TenantChoice> tenants;
  if (!options.workload.empty() || !options.policy.empty() || conf_policy) {
    if (options.workload.empty()) throw Error("--policy needs a --workload to replay");
    if (options.policy.empty() && !conf_policy) throw Error("--workload needs a --policy (see `allocsim policies`)");
    PolicySpec policy = conf_policy ? std::move(*conf_policy) : parse_policy_spec(options.policy);
    tenants.push_back(TenantChoice{parse_workload_spec(options.workload), std::move(policy)});
  }
  for (const std::string& tenant : options.tenants) tenants.push_back(parse_tenant(tenant));
  if (tenants.empty()) throw Error("nothing to run: give --workload and --policy, or --tenant (see --help)");
  return tenants;
}

// Before a long run: no output over an input or another output, every folder writable.
void check_paths(const RunOptions& options, const std::vector<TenantChoice>& tenants) {
  OutputPaths paths;
  for (const TenantChoice& tenant : tenants) {
    if (const FileChoice* file = tenant.workload.file()) paths.input("--workload", file->path);
  }
  paths.input("--device-profile", options.device.cost_profile);
  paths.output("--csv", options.csv);
  paths.output("--json", options.json);
  paths.output("--timeline", options.timeline);
  paths.output("--report", options.report);
  paths.output("--save-trace", options.save_trace);
  paths.output("--memory-viz", options.memory_viz);
  paths.output("--chrome-trace", options.chrome_trace);
  paths.check();
}

RunChoice run_choice(const RunOptions& options, const std::vector<TenantChoice>& tenants, OnOom on_oom, bool batch) {
  RunChoice choice;
  for (const auto& [workload, policy, start] : tenants) choice.tenants.push_back(RunTenant{workload, policy.maker(), start});
  choice.device = options.device;
  choice.on_oom = on_oom;
  choice.check = options.check;
  choice.stream = options.stream;
  // A trace file loads on a thread of its own while the replay runs what is read so far,
  // unless an output needs the whole trace beside the run's results.
  choice.overlap_load = options.save_trace.empty() && options.report.empty() && options.memory_viz.empty() &&
                        options.chrome_trace.empty();
  choice.recorded_card = true;
  if (batch) choice.batch = options.batch;
  choice.cuda_device = options.cuda_device;
  return choice;
}

void save_trace(const Scenario& scenario, const std::string& path) {
  if (scenario.tenants.size() != 1) throw Error("--save-trace writes one tenant's trace; this run has several");
  const TenantSpec& tenant = scenario.tenants.front();
  if (std::filesystem::path(path).extension() == ".atrace") {
    if (tenant.trace) {
      write_atrace_file(*tenant.trace, path);
    } else {
      write_atrace_file(*tenant.source->open(), path);  // one pass of the stream, then the replay's
    }
  } else {
    if (!tenant.trace) throw Error("--save-trace with --stream writes .atrace only: name the file FILE.atrace");
    write_csv_trace_file(*tenant.trace, path);
  }
}

void print_run(std::ostream& out, const RunSetup& setup, const RunResult& result) {
  const DeviceSpec& device = setup.scenario.device;
  out << "device " << device.name << ": " << format_bytes(device.capacity) << ", context "
      << format_bytes(device.context_overhead) << ", granularity " << format_bytes(device.granularity) << '\n';
  if (!setup.device_note.empty()) out << "  " << setup.device_note << '\n';
  for (const std::string& recording : setup.recordings) {
    out << recording << ": a PyTorch recording, replayed from an empty allocator (the blocks it found live are "
        << "allocated first); allocsim replay " << recording << " --policy SPEC starts from the state it began in\n";
  }
  write_table(out, result);
}

// The run with the observers its outputs need, its table printed, then every output file.
void run_and_write(std::ostream& out, const RunOptions& options, const RunSetup& setup) {
  std::optional<Timeline> timeline;
  std::vector<Observer*> observers;
  if (!options.timeline.empty()) observers.push_back(&timeline.emplace());
  std::optional<RunRecorders> recorders;
  if (!options.report.empty()) {
    for (Observer* observer : recorders.emplace().observers()) observers.push_back(observer);
  }
  const RunResult result = run_and_export(setup.scenario, ExportFiles{options.memory_viz, options.chrome_trace}, observers);
  print_run(out, setup, result);
  if (!options.csv.empty()) write_file_atomically(options.csv, [&](std::ostream& file) { write_csv(file, {&result, 1}); });
  if (!options.json.empty()) write_file_atomically(options.json, [&](std::ostream& file) { write_json(file, result); });
  if (timeline) write_file_atomically(options.timeline, [&](std::ostream& file) { timeline->write_csv(file); });
  if (recorders) {
    const ReportedRun reported{"", setup.scenario, result, *recorders};
    const std::string title = "allocsim run: " + run_title(result);
    write_report_page(options.report, title, run_report_data(title, command_text(command_line()), {&reported, 1}));
  }
}

}  // namespace

int run_command(std::span<const std::string> args, std::ostream& out) {
  RunOptions options;
  const po::options_description description = run_options(options);
  const po::variables_map values = parse_options(args, description);
  if (values.count("help")) {
    out << kAllocsimUsage << '\n' << description << '\n';
    return 0;
  }
  std::optional<PolicySpec> conf_policy = alloc_conf_instead(options.policy, options.alloc_conf, out);
  const OnOom on_oom = parse_on_oom(options.on_oom);
  const std::vector<TenantChoice> tenants = tenant_specs(options, std::move(conf_policy));
  check_paths(options, tenants);
  const RunSetup setup = run_scenario(run_choice(options, tenants, on_oom, values.count("batch") > 0));
  if (!options.save_trace.empty()) save_trace(setup.scenario, options.save_trace);
  run_and_write(out, options, setup);
  return 0;
}

}  // namespace allocsim
