// `allocsim replay FILE.pickle --policy SPECS`: the command around replay_from_recording().
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <boost/program_options.hpp>

#include "app/commands.hpp"
#include "app/snapshot_arguments.hpp"
#include "sim/atomic_file.hpp"
#include "sim/error.hpp"
#include "sim/output_paths.hpp"
#include "studies/replay_from_recording.hpp"
#include "studies/sweep_grid.hpp"

namespace allocsim {

namespace po = boost::program_options;

namespace {

constexpr const char* kReplayUsage = R"(allocsim replay: would another allocator setting have saved this run?

Usage:
  allocsim replay FILE.pickle --policy SPECS [--capacity SIZE] [--cuda-device N] [--csv FILE]

Reads a torch.cuda.memory._dump_snapshot() pickle and replays its trace through each
policy of SPECS (a comma-separated list, as sweep takes), every one starting from the
allocator state the recording began in:
  caching[:KEYS], expandable[:KEYS]  PyTorch's allocator with the recorded settings, your keys
                                     replacing theirs; a native one adopts the recorded segments
                                     and blocks where they were, so plain `caching` replays what
                                     PyTorch did (replay-check tells whether exactly)
  any other policy, expandable too   first allocates the blocks live at the start, by address
The device is as large as the recorded run could use when it ran out of memory (the bytes it
reserved at the OOM plus the device_free PyTorch recorded), else unlimited; --capacity sets it.
Prints recorded and simulated side by side: reserved and allocated peaks, segments reserved
during the trace (cudaMalloc calls, or page maps for expandable), OOMs, and whether each
policy avoided the recorded OOM (it served every request). A served OOM request is freed at
once: what the recording did next ran without that tensor.

Examples (PYTORCH_CUDA_ALLOC_CONF keys and their specs):
  allocsim replay oom.pickle --policy caching,expandable                  expandable_segments:True
  allocsim replay oom.pickle --policy caching:max_split_size=128MiB       max_split_size_mb:128
  allocsim replay oom.pickle --policy caching:gc_threshold=0.8,fraction=0.95
                                          garbage_collection_threshold:0.8 (needs a memory fraction)

Exit status: 0 when the replays ran (an OOM is a result), 2 on bad input.
)";


// The side-by-side table: a label column, then the recording and one column per policy.
void print_table(std::ostream& out, const WhatIf& what_if) {
  std::vector<const WhatIfOutcome*> sides{&what_if.recorded};
  for (const WhatIfOutcome& outcome : what_if.replayed) sides.push_back(&outcome);
  std::vector<std::vector<std::string>> rows;
  const auto row = [&](std::string label, auto cell) {
    std::vector<std::string> cells{std::move(label)};
    for (std::size_t i = 0; i < sides.size(); ++i) cells.push_back(cell(*sides[i], i == 0));
    rows.push_back(std::move(cells));
  };
  row("", [](const WhatIfOutcome&, bool recorded) { return std::string(recorded ? "recorded" : "simulated"); });
  row("policy", [](const WhatIfOutcome& o, bool) { return o.policy; });
  row("start", [](const WhatIfOutcome& o, bool) { return o.start; });
  row("reserved peak", [](const WhatIfOutcome& o, bool) { return format_bytes_exact(o.peak_reserved); });
  row("allocated peak", [](const WhatIfOutcome& o, bool) { return format_bytes_exact(o.peak_allocated); });
  row("segments reserved", [](const WhatIfOutcome& o, bool) { return std::to_string(o.device_allocs); });
  row("OOMs", [](const WhatIfOutcome& o, bool) { return std::to_string(o.ooms); });
  row("avoided the recorded OOM", [&](const WhatIfOutcome& o, bool recorded) -> std::string {
    if (!what_if.recorded_oom()) return "no OOM recorded";
    if (recorded) return "-";
    return o.ooms == 0 ? "yes" : "no";
  });
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
  for (const WhatIfOutcome* side : sides) {  // beside the table: a sentence would widen every column
    if (side->first_oom) out << "  first OOM, " << (side == sides.front() ? "recorded" : side->policy) << ": " << *side->first_oom << '\n';
  }
}

}  // namespace

int replay_command(std::span<const std::string> args, std::ostream& out) {
  std::vector<std::string> policy_lists;
  std::optional<std::string> capacity;
  SnapshotArguments snapshot;
  std::string csv;
  po::options_description description("Options");
  description.add_options()("help,h", "this help")(
      "policy,p", po::value(&policy_lists)->value_name("SPECS")->composing(),
      "policies to replay, comma-separated (repeatable); default caching,expandable")(
      "capacity,c", po::value<std::string>()->value_name("SIZE")->notifier([&](const std::string& s) { capacity = s; }),
      "the device's memory (default: what the recorded run could hold at its OOM, else no limit)")(
      "csv", po::value(&csv)->value_name("FILE"), "also a CSV row per side (written whole)");
  if (!parse_snapshot_arguments(args, description, snapshot, kReplayUsage, "replay needs a snapshot: allocsim replay FILE.pickle --policy SPECS", out)) return 0;
  const std::string& file = snapshot.file;
  const std::optional<int>& cuda_device = snapshot.cuda_device;
  std::vector<std::string> policies;
  for (const std::string& list : policy_lists.empty() ? std::vector<std::string>{"caching,expandable"} : policy_lists) {
    for (std::string& item : split_list(list, "--policy")) policies.push_back(std::move(item));
  }
  std::optional<Bytes> device_capacity;
  if (capacity) {
    device_capacity = parse_bytes(*capacity);
    if (*device_capacity == 0) throw Error("--capacity must be more than 0 bytes");
  }
  OutputPaths paths;
  paths.input("the snapshot", file);
  paths.output("--csv", csv);
  paths.check();

  const TorchRecording recording = read_torch_recording(file, cuda_device);
  const WhatIf what_if = replay_from_recording(recording, policies, device_capacity);
  out << "replay " << file << ": every policy from the allocator state the recording began in\n"
      << "  recording: device " << recording.device << (recording.format.empty() ? "" : ", written by ")
      << recording.format << ", " << recording.trace.events.size() << " events, "
      << recording.preexisting.size() << " blocks live at the start\n"
      << "  device: " << format_bytes_exact(what_if.capacity) << ", " << what_if.capacity_source << "\n";
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
  print_table(out, what_if);
  if (!csv.empty()) write_file_atomically(csv, [&](std::ostream& stream) { write_what_if_csv(stream, what_if, file); });
  return 0;
}

}  // namespace allocsim
