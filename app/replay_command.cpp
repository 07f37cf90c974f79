// `allocsim replay FILE.pickle --policy SPECS`: the command around replay_from_recording().
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <optional>
#include <span>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <boost/program_options.hpp>

#include "app/alloc_conf_option.hpp"
#include "app/commands.hpp"
#include "app/snapshot_arguments.hpp"
#include "policies/registry.hpp"
#include "sim/atomic_file.hpp"
#include "sim/error.hpp"
#include "sim/report.hpp"
#include "sim/output_paths.hpp"
#include "sim/version.hpp"
#include "studies/report_page.hpp"
#include "studies/run_report.hpp"
#include "studies/scenario_choice.hpp"
#include "studies/replay_from_recording.hpp"
#include "studies/replay_log.hpp"
#include "studies/run_exports.hpp"
#include "studies/sweep_grid.hpp"
#include "workloads/catalogue.hpp"

namespace allocsim {

namespace po = boost::program_options;

namespace {

constexpr const char* kReplayUsage = R"(allocsim replay: would another allocator setting have saved this run?

Usage:
  allocsim replay FILE.pickle --policy SPECS [--device NAME] [--capacity SIZE] [--cuda-device N] [--csv FILE]
  allocsim replay LOG.csv [--policy SPECS] [--device NAME] [--capacity SIZE] [--csv FILE]

Reads a torch.cuda.memory._dump_snapshot() pickle and replays its trace through each
policy of SPECS (a comma-separated list, as sweep takes), every one starting from the
allocator state the recording began in:
  caching[:KEYS], expandable[:KEYS]  PyTorch's allocator with the recorded settings, your keys
                                     replacing theirs; a native one adopts the recorded segments
                                     and blocks where they were, so plain `caching` replays what
                                     PyTorch did (replay-check tells whether exactly)
  any other policy, expandable too   first allocates the blocks live at the start, by address
The device is as large as the recorded run could use when it ran out of memory (the bytes it
reserved at the OOM plus the device_free PyTorch recorded), else unlimited; --device sets a
card (its capacity, CUDA context and pages: `allocsim devices`), --capacity the capacity.
Prints recorded and simulated side by side: reserved and allocated peaks, segments reserved
during the trace (cudaMalloc calls, or page maps for expandable), OOMs, and whether each
policy avoided the recorded OOM (it served every request). A served OOM request is freed at
once: what the recording did next ran without that tensor.

Examples (PYTORCH_CUDA_ALLOC_CONF keys and their specs):
  allocsim replay oom.pickle --policy caching,expandable                  expandable_segments:True
  allocsim replay oom.pickle --policy caching:max_split_size=128MiB       max_split_size_mb:128
  allocsim replay oom.pickle --policy caching:gc_threshold=0.8,fraction=0.95
                                          garbage_collection_threshold:0.8 (needs a memory fraction)

Any other trace the catalogue reads (an RMM logging_resource_adaptor log, our CSV) replays
as RMM's REPLAY_BENCHMARK replays a log: each policy from an empty allocator, one request at
a time in the file's order, on one simulated device (--device or --capacity, default 16 GiB:
give the memory the logged run had), going on past an OOM as the logged program did. Default policies
rmm-pool,rmm-arena,rmm-binning,async; the benchmark's own binning is
rmm-binning:min_exp=18,max_exp=22 and its `pool -s S` is rmm-pool:initial=SGiB,maximum=SGiB.
Prints per policy what the benchmark cannot: peak reserved and allocated, fragmentation at
the peak, OOMs, allocator time, and for each `allocate failure` row of the log whether the
replay failed there too (with the capacity the log ran with, it should).
  allocsim replay rmm_log.dev0.csv --capacity 32GiB --policy rmm-pool,rmm-arena,rmm-binning,async
With one policy, --memory-viz FILE and --chrome-trace FILE.json export that replay (of a
recording or a log) to look at: pytorch.org/memory_viz, ui.perfetto.dev (docs/export.md).
--report FILE.html draws every policy's replay (of a recording or a log) on one offline page:
bytes over time, the memory map, each OOM at its moment, the peak (docs/report.md).
  allocsim replay oom.pickle --policy caching,expandable --report oom.html

Exit status: 0 when every replay ran (an OOM is a result), 1 when a policy asked for could
not replay the recording (the others are still shown, and it is named), 2 on bad input and
when the one policy asked for could not replay (its reason is the error).
)";

// Label column first, one column per side, padded to the widest cell.
void print_rows(std::ostream& out, const std::vector<std::vector<std::string>>& rows) {
  std::vector<std::size_t> width(rows.front().size(), 0);
  for (const auto& cells : rows) {
    for (std::size_t c = 0; c < cells.size(); ++c) width[c] = std::max(width[c], cells[c].size());
  }
  for (const auto& cells : rows) {
    out << "  ";
    for (std::size_t c = 0; c < cells.size(); ++c) {
      const bool last = c + 1 == cells.size();
      out << std::left << std::setw(last ? 0 : static_cast<int>(width[c])) << cells[c] << (last ? "" : "   ");
    }
    out << '\n';
  }
}

// A row per field of the log's column table (studies/replay_log.hpp), a column per policy.
void print_log_table(std::ostream& out, const LogReplay& replay) {
  print_rows(out, log_replay_table(replay));
  for (const LogReplayOutcome& outcome : replay.outcomes) {
    const TenantResult& tenant = outcome.run.tenants.front();
    if (!tenant.ooms.empty()) out << "  first OOM, " << outcome.policy << ": " << describe_oom(tenant.ooms.front()) << '\n';
  }
}

// The page of a replay, one run per policy: a log's outcomes and a recording's replayed
// sides alike, each with its row of the command's column table.
void write_replay_report(const std::string& report, const std::string& file, std::span<const ReportedRun> reported) {
  const std::string title = "allocsim replay: " + std::filesystem::path(file).filename().string();
  write_report_page(report, title, run_report_data(title, command_text(command_line()), reported));
}

int replay_log_command(const std::string& file, std::span<const RecordingPolicy> read,
                       const ReplayDevice& chosen, const std::string& csv, std::optional<int> cuda_device,
                       const ExportFiles& exports,
                       const std::string& report,
                       std::ostream& out) {
  std::vector<PolicyMaker> policies;
  for (const RecordingPolicy& policy : read) policies.push_back(policy.maker);
  const DeviceSpec device = chosen.device.value_or(DeviceSpec{});
  LoadOptions options;
  options.cuda_device = cuda_device;
  const LogReplay replay = replay_log_file(file, policies, device, options, exports, !report.empty());
  out << "replay " << file << ": every policy from an empty allocator, in the file's order (" << replay.reader << ")\n"
      << "  " << replay.events << " events; failed requests in the log: " << replay.failures << "\n"
      << "  device: " << format_bytes_exact(device.capacity) << ", "
      << (chosen.device ? chosen.source : "the default (--device or --capacity sets it)")
      << "\n";
  print_log_table(out, replay);
  if (!csv.empty()) {
    std::vector<RunResult> runs;
    for (const LogReplayOutcome& outcome : replay.outcomes) runs.push_back(outcome.run);
    write_file_atomically(csv, [&](std::ostream& stream) { write_csv(stream, runs); });
  }
  if (!report.empty()) write_replay_report(report, file, log_replay_reported(replay));
  return 0;
}


// The side-by-side table: a label column, then the recording and one column per policy
// (the what-if's column table, studies/replay_from_recording.hpp).
void print_table(std::ostream& out, const WhatIf& what_if, const std::string& file) {
  std::vector<const WhatIfOutcome*> sides{&what_if.recorded};
  for (const WhatIfOutcome& outcome : what_if.replayed) sides.push_back(&outcome);
  print_rows(out, what_if_table(what_if, file));
  for (const WhatIfOutcome* side : sides) {  // beside the table: a sentence would widen every column
    if (side->first_oom) out << "  first OOM, " << (side == sides.front() ? "recorded" : side->policy) << ": " << *side->first_oom << '\n';
  }
  for (const WhatIf::Failed& failed : what_if.failed) out << "  could not replay " << failed.policy << ": " << failed.error << '\n';
  if (const std::optional<std::size_t> best = what_if.best()) {
    const WhatIfOutcome& side = what_if.replayed[*best];
    out << "  best setting: " << side.policy << ", reserved peak " << format_bytes(side.peak_reserved) << "; in PyTorch:\n";
    std::istringstream lines(side.torch_setting);
    for (std::string line; std::getline(lines, line);) out << "    " << line << '\n';
  }
}

// What `replay` reads from its command line.
struct ReplayOptions {
  std::vector<std::string> policy_lists;
  std::string alloc_conf;
  std::optional<std::string> capacity;
  std::string device_name;
  SnapshotArguments snapshot;
  std::string csv;
  ExportFiles exports;
  std::string report;
};

// False when it printed the help.
bool parse_replay_options(std::span<const std::string> args, ReplayOptions& options, std::ostream& out) {
  po::options_description description("Options");
  description.add_options()("help,h", "this help")(
      "policy,p", po::value(&options.policy_lists)->value_name("SPECS")->composing(),
      "policies to replay, comma-separated (repeatable), or all; default caching,expandable")(
      "device,d", po::value(&options.device_name)->value_name("NAME"),
      "a device preset: capacity, context overhead, 2 MiB pages (see `allocsim devices`)")(
      "capacity,c",
      po::value<std::string>()->value_name("SIZE")->notifier([&](const std::string& s) { options.capacity = s; }),
      "the device's memory (default: what the recorded run could hold at its OOM, else no limit)")(
      "csv", po::value(&options.csv)->value_name("FILE"), "also a CSV row per side (written whole)")(
      "memory-viz", po::value(&options.exports.memory_viz)->value_name("FILE"),
      "the replay through one --policy as a PyTorch memory snapshot for pytorch.org/memory_viz (docs/export.md)")(
      "chrome-trace", po::value(&options.exports.chrome_trace)->value_name("FILE.json"),
      "the same replay as Chrome trace JSON for ui.perfetto.dev (counters in bytes, the 20000 largest "
      "allocations as slices, OOMs)")(

      "report", po::value(&options.report)->value_name("FILE.html"),
      "the replays as a self-contained HTML page: every policy's bytes over time, memory map, OOMs and peak");
  add_alloc_conf_option(description, options.alloc_conf);
  return parse_snapshot_arguments(args, description, options.snapshot, kReplayUsage,
                                  "replay needs a snapshot: allocsim replay FILE.pickle --policy SPECS", out);
}

// --device and --capacity; none: what the recording (or the default) says.
ReplayDevice replay_device(const ReplayOptions& options) {
  if (!options.capacity && options.device_name.empty()) return {};
  DeviceChoice choice;
  choice.presets = options.device_name;
  choice.capacities = options.capacity.value_or("");
  const std::string source = options.device_name.empty() ? "--capacity"
                             : options.capacity          ? "--device " + options.device_name + " with --capacity"
                                                         : "--device " + options.device_name;
  return ReplayDevice(chosen_device(choice), source);
}

void check_replay_paths(const ReplayOptions& options) {
  OutputPaths paths;
  paths.input("the snapshot", options.snapshot.file);
  paths.output("--csv", options.csv);
  paths.output("--memory-viz", options.exports.memory_viz);
  paths.output("--chrome-trace", options.exports.chrome_trace);
  paths.output("--report", options.report);
  paths.check();
}

// What the recording is, on what device it was replayed, and whether `caching` replays it exact.
void print_recording_header(std::ostream& out, const std::string& file, const TorchRecording& recording,
                            const WhatIf& what_if) {
  out << "replay " << file << ": every policy from the allocator state the recording began in\n"
      << "  recording: device " << recording.device << (recording.format.empty() ? "" : ", written by ")
      << recording.format << ", " << recording.trace.events.size() << " events, "
      << recording.preexisting.size() << " blocks live at the start\n"
      << "  device: " << format_bytes_exact(what_if.capacity)
      << (what_if.device.context_overhead == 0 ? "" : ", context " + format_bytes(what_if.device.context_overhead))
      << ", " << what_if.capacity_source << "\n";
  out << "  replay-check: " << (what_if.replay_check_divergence ? "diverged (" + *what_if.replay_check_divergence + ")"
                                                               : std::string("exact, `caching` replays what PyTorch did"))
      << "\n";
  if (what_if.releases_in_allocs > 0) {
    out << "  releases inside an alloc (no empty_cache() call, left to each policy): " << what_if.releases_in_allocs << "\n";
  }
  if (!what_if.ambiguous_sizes.empty()) {
    out << "  ambiguous sizes: " << what_if.ambiguous_sizes.size()
        << " blocks from before the recording fit two sizing rules; the first: " << what_if.ambiguous_sizes.front()
        << "\n";
  }
}

}  // namespace

int replay_command(std::span<const std::string> args, std::ostream& out) {
  ReplayOptions options;
  if (!parse_replay_options(args, options, out)) return 0;
  const std::string& file = options.snapshot.file;
  const std::optional<int>& cuda_device = options.snapshot.cuda_device;
  const bool is_recording = find_reader(file).holds == Holds::allocator_state;
  std::vector<std::string>& policy_lists = options.policy_lists;
  if (policy_lists.empty() && options.alloc_conf.empty()) {
    policy_lists.push_back(is_recording ? "caching,expandable" : "rmm-pool,rmm-arena,rmm-binning,async");
  }
  std::optional<PolicySpec> conf = alloc_conf_spec(options.alloc_conf, out);
  std::vector<RecordingPolicy> policies;  // each spec read once, here: the lists', then --alloc-conf's
  for (PolicySpec& policy : parse_policy_lists(policy_lists)) policies.emplace_back(std::move(policy));
  if (conf) policies.emplace_back(std::move(*conf));
  const ReplayDevice device = replay_device(options);
  check_replay_paths(options);

  if (!is_recording) {
    return replay_log_command(file, policies, device, options.csv, cuda_device, options.exports, options.report, out);
  }
  const TorchRecording recording = read_torch_recording(file, cuda_device);
  const WhatIf what_if = replay_from_recording(recording, policies, device, options.exports, !options.report.empty());
  print_recording_header(out, file, recording, what_if);
  print_table(out, what_if, file);
  if (!options.csv.empty()) {
    write_file_atomically(options.csv, [&](std::ostream& stream) { write_what_if_csv(stream, what_if, file); });
  }
  if (!options.report.empty()) write_replay_report(options.report, file, what_if_reported(what_if, file));
  return what_if.failed.empty() ? 0 : 1;
}

}  // namespace allocsim
