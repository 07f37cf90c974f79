#include "sim/cli/cli.hpp"

#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <vector>

#include <boost/program_options.hpp>

#include "policies/registry.hpp"
#include "sim/atomic_file.hpp"
#include "sim/cli/commands.hpp"
#include "sim/cli/gpu_commands.hpp"
#include "sim/cli/parse_options.hpp"
#include "sim/cost_profile.hpp"
#include "sim/device_presets.hpp"
#include "sim/engine.hpp"
#include "sim/error.hpp"
#include "sim/report.hpp"
#include "sim/timeline.hpp"
#include "workloads/catalogue.hpp"
#include "workloads/csv_trace.hpp"
#include "workloads/model/model_spec.hpp"

namespace allocsim {
namespace {

namespace po = boost::program_options;

constexpr const char* kUsage = R"(allocsim: replay GPU memory allocation workloads through allocator policies.

Usage:
  allocsim [run] --workload SPEC --policy SPEC [options]   replay and report (the default)
  allocsim policies                                         every policy, what it models, its options
  allocsim workloads                                        every workload generator and the trace format
  allocsim devices                                          device presets for --device
  allocsim replay-check FILE.pickle                         does `caching` reserve what PyTorch did?
  allocsim sweep --workload SPECS --policy SPECS [lists]    the cross product of lists, one CSV (sweep --help)
  allocsim maxbatch --workload MODEL --policy SPECS         the largest batch without OOM, per policy
  allocsim validate --workload SPEC --policy SPEC [--cap S] simulation and the GPU side by side (validate --help)
  allocsim calibrate [--out FILE]                           measure the GPU's allocation costs for --device-profile

Examples:
  allocsim --workload random:n=100000,seed=7 --policy bestfit
  allocsim --workload trace.csv --policy direct --capacity 8GiB --on-oom continue
  allocsim --device v100-16gb --tenant random:live=10GiB@bestfit --tenant random:seed=2,live=2GiB@direct
  allocsim --workload random --policy bestfit:region=4GiB --csv out.csv --json out.json --timeline t.csv

Sizes take binary or SI units: 4096, 512MiB, 16GiB, 1.5GB.
Exit status: 0 when the run completed (an OOM is a result, reported in the output), 2 on bad input.
)";

struct RunOptions {
  std::string workload;
  std::string policy;
  std::vector<std::string> tenants;
  std::string device;
  std::string capacity;
  std::string context;
  std::string granularity;
  std::string device_profile;
  std::string on_oom = "stop";
  std::string csv;
  std::string json;
  std::string timeline;
  std::string save_trace;
  std::int64_t batch = 0;
  bool check = false;
};

po::options_description run_options(RunOptions& options) {
  po::options_description description("Options");
  description.add_options()
      ("help,h", "this help")
      ("workload,w", po::value(&options.workload)->value_name("SPEC"),
       "what to replay: a generator spec (see `allocsim workloads`) or a trace .csv")
      ("policy,p", po::value(&options.policy)->value_name("SPEC"),
       "the allocator: name[:key=value,...] (see `allocsim policies`)")
      ("tenant,t", po::value(&options.tenants)->value_name("WORKLOAD@POLICY")->composing(),
       "one more process on the same device; repeat for several")
      ("device,d", po::value(&options.device)->value_name("NAME"),
       "a device preset: capacity, context overhead, 2 MiB pages (see `allocsim devices`)")
      ("capacity,c", po::value(&options.capacity)->value_name("SIZE"),
       "device memory; alone it is all free to the allocators and charged to the byte (default 16GiB)")
      ("context", po::value(&options.context)->value_name("SIZE"), "memory the CUDA context takes before any allocation")
      ("granularity", po::value(&options.granularity)->value_name("SIZE"),
       "device allocations are charged whole pages of this size, e.g. 2MiB")
      ("device-profile", po::value(&options.device_profile)->value_name("FILE"),
       "the cost model of device calls, as `allocsim calibrate` measured it")
      ("on-oom", po::value(&options.on_oom)->value_name("stop|continue"),
       "stop: the tenant crashes at its first OOM (default); continue: count the OOM, skip the request")
      ("csv", po::value(&options.csv)->value_name("FILE"), "one CSV row per tenant (columns in README)")
      ("json", po::value(&options.json)->value_name("FILE"), "the results and every OOM as JSON")
      ("timeline", po::value(&options.timeline)->value_name("FILE"),
       "allocated and reserved bytes over simulated time, as CSV")
      ("batch,b", po::value(&options.batch)->value_name("N"), "the batch of every model workload (as its _bN token)")
      ("save-trace", po::value(&options.save_trace)->value_name("FILE"),
       "write the workload's trace as CSV (one tenant), e.g. to see what a model step allocates")
      ("check", po::bool_switch(&options.check), "check every invariant after every event (slow)");
  return description;
}

DeviceSpec build_device(const RunOptions& options) {
  DeviceSpec device = options.device.empty() ? DeviceSpec{} : device_spec(options.device);
  if (!options.capacity.empty()) device.capacity = parse_bytes(options.capacity);
  if (!options.context.empty()) device.context_overhead = parse_bytes(options.context);
  if (!options.granularity.empty()) device.granularity = parse_bytes(options.granularity);
  if (!options.device_profile.empty()) device.cost = load_cost_profile(options.device_profile).cost;
  if (device.capacity == 0) throw Error("--capacity must be more than 0 bytes");
  if (device.granularity == 0) throw Error("--granularity must be at least 1 byte");
  return device;
}

std::vector<std::pair<std::string, std::string>> tenant_specs(const RunOptions& options) {
  std::vector<std::pair<std::string, std::string>> tenants;
  if (!options.workload.empty() || !options.policy.empty()) {
    if (options.workload.empty()) throw Error("--policy needs a --workload to replay");
    if (options.policy.empty()) throw Error("--workload needs a --policy (see `allocsim policies`)");
    tenants.emplace_back(options.workload, options.policy);
  }
  for (const std::string& tenant : options.tenants) {
    const auto at = tenant.rfind('@');
    if (at == std::string::npos || at == 0 || at + 1 == tenant.size()) {
      throw Error("--tenant '" + tenant + "' is not WORKLOAD@POLICY");
    }
    tenants.emplace_back(tenant.substr(0, at), tenant.substr(at + 1));
  }
  if (tenants.empty()) throw Error("nothing to run: give --workload and --policy, or --tenant (see --help)");
  return tenants;
}

int run_command(std::span<const std::string> args, std::ostream& out) {
  RunOptions options;
  const po::options_description description = run_options(options);
  const po::variables_map values = parse_options(args, description);
  if (values.count("help")) {
    out << kUsage << '\n' << description << '\n';
    return 0;
  }
  if (options.on_oom != "stop" && options.on_oom != "continue") {
    throw Error("--on-oom " + options.on_oom + " is not stop or continue");
  }

  // Every output's folder must exist before a long run, so a typo fails now, not after it.
  for (const std::string& path : {options.csv, options.json, options.timeline, options.save_trace}) {
    check_output_folder(path);
  }
  Scenario scenario;
  scenario.device = build_device(options);
  scenario.on_oom = options.on_oom == "stop" ? OnOom::stop : OnOom::continue_run;
  scenario.check = options.check;
  std::map<std::string, std::shared_ptr<const Trace>> traces;  // a workload named twice loads once
  for (auto [workload, policy] : tenant_specs(options)) {
    find_policy(parse_spec(policy).name);  // a bad policy fails before a long trace load
    if (values.count("batch")) {
      if (options.batch < 1 || !parse_model_spec(workload)) throw Error("--batch needs a batch of 1 or more and a model workload");
      workload += "_b" + std::to_string(options.batch);  // the last token wins
    }
    auto& trace = traces[workload];
    if (!trace) trace = std::make_shared<const Trace>(load_workload(workload));
    scenario.tenants.push_back(TenantSpec{trace, policy, 0});
  }

  if (!options.save_trace.empty()) {
    if (scenario.tenants.size() != 1) throw Error("--save-trace writes one tenant's trace; this run has several");
    write_csv_trace_file(*scenario.tenants.front().trace, options.save_trace);
  }
  std::optional<Timeline> timeline;
  std::vector<Observer*> observers;
  if (!options.timeline.empty()) observers.push_back(&timeline.emplace());
  const RunResult result = run(scenario, make_policy, observers);

  const DeviceSpec& device = scenario.device;
  out << "device " << device.name << ": " << format_bytes(device.capacity) << ", context "
      << format_bytes(device.context_overhead) << ", granularity " << format_bytes(device.granularity) << '\n';
  write_table(out, result);
  if (!options.csv.empty()) write_file_atomically(options.csv, [&](std::ostream& file) { write_csv(file, {&result, 1}); });
  if (!options.json.empty()) write_file_atomically(options.json, [&](std::ostream& file) { write_json(file, result); });
  if (timeline) write_file_atomically(options.timeline, [&](std::ostream& file) { timeline->write_csv(file); });
  return 0;
}

void list_params(std::ostream& out, std::span<const ParamInfo> params) {
  for (const ParamInfo& param : params) {
    out << "      " << param.key << "=" << param.default_value << "  " << param.help << '\n';
  }
}

int policies_command(std::ostream& out) {
  out << "Policies (use as --policy NAME or NAME:key=value,...):\n";
  for (const PolicyInfo& info : all_policies()) {
    out << "\n  " << info.name;
    if (!info.alias.empty()) out << " (alias " << info.alias << ")";
    out << ": " << info.summary << "\n    models: " << info.models << '\n';
    if (!info.params.empty()) out << "    options:\n";
    list_params(out, info.params);
  }
  return 0;
}

int workloads_command(std::ostream& out) {
  out << "Workloads (use as --workload NAME or NAME:key=value,...):\n";
  for (const WorkloadInfo& info : all_workloads()) {
    out << "\n  " << info.name << ": " << info.summary << "\n    example: " << info.example << "\n    options:\n";
    list_params(out, info.params);
  }
  out << "\n  models, as MODEL[_token...] (e.g. resnet50_b64, resnet50_b256_amp_adam, seed_cnn_dw_b8_infer):\n";
  for (const ZooModel& model : zoo()) {
    const Model built = model.build();
    out << "    " << model.name << ": " << model.summary << ", " << built.parameter_count() << " parameters in "
        << built.parameter_tensors() << " tensors\n";
  }
  out << "    tokens: " << model_spec_tokens() << "\n";
  out << "\n  a trace file: any path with a '/' or ending in .csv\n"
         "    header time_ns,op,id,bytes,stream,tag (stream and tag optional); op is alloc, free or release;\n"
         "    a free may leave bytes empty; ids are any text and may be reused after their free; '#' starts a comment\n";
  return 0;
}

int devices_command(std::ostream& out) {
  out << "Devices (use as --device NAME; --capacity, --context, --granularity override):\n\n";
  for (const DevicePreset& preset : all_devices()) {
    out << "  " << preset.name << ": " << preset.summary << ", " << format_bytes(preset.capacity) << ", sm_"
        << preset.compute_capability << ", context ~" << format_bytes(preset.context_overhead)
        << " (estimate), 2 MiB pages\n";
  }
  out << "\n  without --device: 'sim', 16 GiB or --capacity, no context, charged to the byte, sm_90\n";
  return 0;
}

}  // namespace

int run_cli(std::span<const std::string> args, std::ostream& out, std::ostream& err) {
  try {
    const std::string command = args.empty() ? "" : args.front();
    if (command == "policies") return policies_command(out);
    if (command == "workloads") return workloads_command(out);
    if (command == "devices") return devices_command(out);
    if (command == "help") return run_command(std::vector<std::string>{"--help"}, out);
    if (command == "run") return run_command(args.subspan(1), out);
    if (command == "replay-check") return replay_check_command(args.subspan(1), out);
    if (command == "sweep") return sweep_command(args.subspan(1), out, err);
    if (command == "maxbatch") return maxbatch_command(args.subspan(1), out);
    if (command == "validate") return validate_command(args.subspan(1), out);
    if (command == "calibrate") return calibrate_command(args.subspan(1), out);
    if (!command.empty() && command.front() != '-') {
      throw Error("unknown command '" + command +
                  "' (run, replay-check, sweep, maxbatch, validate, calibrate, policies, workloads, devices, help)");
    }
    if (args.empty()) {
      out << kUsage;
      return 2;
    }
    return run_command(args, out);
  } catch (const Error& error) {
    err << "allocsim: " << error.what() << '\n';
    return 2;
  } catch (const po::error& error) {
    err << "allocsim: " << error.what() << " (see allocsim --help)\n";
    return 2;
  } catch (const std::bad_alloc&) {
    err << "allocsim: out of memory: the workload is too large for this machine\n";
    return 2;
  } catch (const std::exception& error) {
    err << "allocsim: internal error: " << error.what() << '\n';
    return 1;
  }
}

}  // namespace allocsim
