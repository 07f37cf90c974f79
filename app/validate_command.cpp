// `allocsim validate`: one workload under one policy, simulated and on the device, side
// by side; writes DIR/STEM.csv (the comparison) and DIR/STEM.calls.csv (every device call).
#include <stdlib.h>  // mkdtemp

#include <filesystem>
#include <optional>
#include <string>
#include <utility>

#include <boost/program_options.hpp>

#include "app/alloc_conf_option.hpp"
#include "app/commands.hpp"
#include "app/parse_options.hpp"
#include "policies/registry.hpp"
#include "real_gpu/validation.hpp"
#include "studies/scenario_choice.hpp"
#include "sim/atomic_file.hpp"
#include "sim/cost_profile.hpp"
#include "sim/error.hpp"
#include "sim/output_paths.hpp"
#include "workloads/catalogue.hpp"

namespace allocsim {
namespace {

namespace po = boost::program_options;

constexpr const char* kValidateUsage = R"(allocsim validate: replay a workload in simulation and on the GPU, side by side.

Usage:
  allocsim validate --workload SPEC --policy SPEC [--cap SIZE] [options]

Every segment the policy asks for is a real cudaMalloc (or VMM pages with --segments vmm),
written in full on the device; the simulated device mirrors the real one (capacity, memory
already in use, 2 MiB pages). With --cap a ballast allocation holds the rest of the card, so
it behaves like a card of SIZE. Compared: device bytes used (cudaMemGetInfo), peak reserved,
device calls, the OOM event (exact targets), and time per device call against the cost model.

Examples:
  allocsim validate --workload resnet50_b64 --policy bfc
  allocsim validate --workload resnet50_b256 --policy caching --cap 16GiB
  allocsim validate --workload resnet50_b64 --policy caching --backend host   (no GPU needed)

Exit status: 0 when both replays ran (disagreements are results, in the table and CSV),
2 on bad input or when no GPU can be opened (the line says what is missing).
)";

// A new folder of the user's own (mkdtemp: mode 0700, an unpredictable name), kept: the CSVs
// written into it are the run's output.
std::string make_temporary_folder(const std::string& prefix) {
  std::string pattern = (std::filesystem::temp_directory_path() / (prefix + "XXXXXX")).string();
  if (::mkdtemp(pattern.data()) == nullptr) throw Error("cannot make a temporary folder in " + pattern);
  return pattern;
}

std::string file_stem(const std::string& workload, const std::string& policy, const std::string& cap,
                      const std::string& segments, const std::string& backend) {
  std::string stem = workload + "__" + policy;
  if (!cap.empty()) stem += "__cap" + cap;
  if (segments != "malloc") stem += "__" + segments;
  stem += "__" + backend;
  for (char& c : stem) {
    const bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
                       c == '-' || c == '_';
    if (!plain) c = '_';
  }
  return stem;
}

struct ValidateCliOptions {
  std::string workload;
  std::string policy;
  std::string cap;
  std::string granularity = "2MiB";
  std::string segments = "malloc";
  std::string profile;
  std::string on_oom = "stop";
  std::string out_dir;
  std::string host_memory = "80GiB";
  std::string alloc_conf;
  BackendChoice backend;
};

po::options_description validate_options(ValidateCliOptions& o) {
  po::options_description description("Options");
  description.add_options()
      ("help,h", "this help")
      ("workload,w", po::value(&o.workload)->value_name("SPEC"), "what to replay, one spec (its commas its own; see `allocsim workloads`)")
      ("policy,p", po::value(&o.policy)->value_name("SPEC"), "the allocator (see `allocsim policies`)")
      ("cap", po::value(&o.cap)->value_name("SIZE"), "behave like a card of SIZE: a ballast allocation holds the rest")
      ("backend", po::value(&o.backend.backend)->value_name("cuda|host"),
       "cuda: the GPU (default); host: the host-memory stand-in that CI tests on")
      ("gpu", po::value(&o.backend.gpu)->value_name("N"), "the CUDA device to use (default 0)")
      ("segments", po::value(&o.segments)->value_name("malloc|vmm"),
       "how segments are made: cudaMalloc (default) or cuMemCreate+cuMemMap of whole pages")
      ("granularity", po::value(&o.granularity)->value_name("SIZE"),
       "the page the simulation charges per segment (default 2MiB, cudaMalloc's on current GPUs)")
      ("device-profile", po::value(&o.profile)->value_name("FILE"),
       "the simulation's cost model, from `allocsim calibrate` (default: the built-in placeholder)")
      ("on-oom", po::value(&o.on_oom)->value_name("stop|continue"), "as for run (default stop)")
      ("out", po::value(&o.out_dir)->value_name("DIR"), "where the CSV files go (default: results/validation for the GPU; a new temporary folder "
       "for the host stand-in, so that its figures never sit beside the hardware's)")
      ("host-memory", po::value(&o.host_memory)->value_name("SIZE"), "the host stand-in's total memory (default 80GiB)");
  add_alloc_conf_option(description, o.alloc_conf);
  return description;
}

// The options checked and read, cheap input first: a typo fails before the GPU is opened
// or a model is lowered. The policy is --alloc-conf's or --policy's, read once here: the
// conf first, --policy last (as every other option is checked before it).
ValidationOptions validation_options(ValidateCliOptions& o, std::ostream& out) {
  std::optional<PolicySpec> conf_policy = alloc_conf_instead(o.policy, o.alloc_conf, out);
  if (o.workload.empty() || (o.policy.empty() && !conf_policy)) {
    throw Error("validate needs --workload and --policy (see validate --help)");
  }
  refuse_workload_list(o.workload);
  if (o.on_oom != "stop" && o.on_oom != "continue") throw Error("--on-oom " + o.on_oom + " is not stop or continue");
  if (o.segments != "malloc" && o.segments != "vmm") throw Error("--segments " + o.segments + " is not malloc or vmm");
  if (o.backend.backend != "cuda" && o.backend.backend != "host") {
    throw Error("--backend " + o.backend.backend + " is not cuda or host");
  }
  ValidationOptions options;
  options.on_oom = o.on_oom == "stop" ? OnOom::stop : OnOom::continue_run;
  options.device.cap = o.cap.empty() ? 0 : parse_bytes(o.cap);
  if (!o.cap.empty() && options.device.cap == 0) throw Error("--cap must be more than 0 bytes");
  options.device.granularity = parse_granularity(o.granularity);
  options.device.source = o.segments == "vmm" ? SegmentSource::vmm : SegmentSource::malloc;
  if (!o.profile.empty()) options.cost = load_cost_profile(o.profile).cost;
  o.backend.host_memory = parse_bytes(o.host_memory);
  options.policy = conf_policy ? std::move(*conf_policy) : parse_policy_spec(o.policy);
  return options;
}

}  // namespace

int validate_command(std::span<const std::string> args, std::ostream& out, const DeviceOpener& open) {
  ValidateCliOptions o;
  const po::options_description description = validate_options(o);
  const po::variables_map values = parse_options(args, description);
  if (values.count("help")) {
    out << kValidateUsage << '\n' << description << '\n';
    return 0;
  }
  const ValidationOptions options = validation_options(o, out);
  std::string out_dir = o.out_dir;
  if (out_dir.empty()) out_dir = o.backend.backend == "host" ? make_temporary_folder("allocsim-validate-") : "results/validation";
  std::filesystem::create_directories(out_dir);
  const std::filesystem::path stem =
      std::filesystem::path(out_dir) / file_stem(o.workload, options.policy.text, o.cap, o.segments, o.backend.backend);
  const std::string table = stem.string() + ".csv";
  const std::string calls = stem.string() + ".calls.csv";
  const WorkloadSpec spec = parse_workload_spec(o.workload);
  OutputPaths paths;
  if (const FileChoice* file = spec.file()) paths.input("--workload", file->path);
  paths.input("--device-profile", o.profile);
  paths.output("the comparison", table);
  paths.output("the device calls", calls);
  paths.check();
  const auto trace = std::make_shared<const Trace>(load_workload(spec));

  const std::unique_ptr<DeviceApi> api = open(o.backend);
  const Validation validation = validate(*api, trace, options);
  const std::vector<MetricComparison> rows = compare(validation);
  write_comparison_table(out, validation, rows);
  write_file_atomically(table, [&](std::ostream& file) { write_comparison_csv(file, validation, rows); });
  write_file_atomically(calls, [&](std::ostream& file) { write_calls_csv(file, validation); });
  out << "wrote " << table << " and " << calls << '\n';
  return 0;
}

}  // namespace allocsim
