// `allocsim replay-check FILE.pickle`: the command around replay_check().
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include <boost/program_options.hpp>

#include "app/commands.hpp"
#include "app/snapshot_arguments.hpp"
#include "sim/error.hpp"
#include "studies/replay_check.hpp"

namespace allocsim {

namespace po = boost::program_options;

namespace {

constexpr const char* kReplayCheckUsage = R"(allocsim replay-check: does `caching` do what PyTorch's allocator did?

Usage:
  allocsim replay-check FILE.pickle [--capacity SIZE] [--cuda-device N]

Reads a torch.cuda.memory._dump_snapshot() pickle (with a loader that refuses any code in
it), rebuilds the allocator as the recording found it (its segments, and the blocks
allocated before recording began, at their offsets), replays the trace through `caching`
with the recorded allocator settings (`expandable` where the recording's segments are
expandable) on a device that returns each segment, or address range, at the address the
recording shows, and compares, in order, every segment PyTorch reserved or released
(cudaMalloc/cudaFree, or the pages it mapped and unmapped) with the policy's (same action,
address, size and trace event) and
every block's address with PyTorch's. Then it compares the final segments and blocks with
the snapshot's. A recorded PYTORCH_CUDA_ALLOC_CONF key the policy cannot model is named.
Prints `exact`, or the first divergence: where, what PyTorch did, what the policy did.

Exit status: 0 exact, 1 diverged, 2 bad input.
)";


// What was rebuilt and replayed, where it differs from PyTorch's, and the verdict.
void print_replay_check(std::ostream& out, const std::string& file, const TorchRecording& recording,
                        const ReplayCheck& check) {
  out << "replay-check " << file << "\n"
      << "  recording: device " << recording.device << (recording.format.empty() ? "" : ", written by ")
      << recording.format << "\n"
      << "  policy: " << check.policy << (recording.settings.recorded ? " (recorded settings)" : " (PyTorch's defaults: the snapshot records no settings)") << "\n";
  const auto list = [](const std::vector<std::string>& entries) {
    std::string text;
    for (const std::string& entry : entries) text += (text.empty() ? "" : ", ") + entry;
    return text;
  };
  if (!check.settings_not_modelled.empty()) {
    out << "  settings not modelled (replayed without them): " << list(check.settings_not_modelled) << "\n";
  }
  if (!check.settings_without_effect.empty()) {
    out << "  settings without effect on a replay: " << list(check.settings_without_effect) << "\n";
  }
  out
      << "  rebuilt start: " << check.segments_at_start << " segments holding " << check.preexisting
      << " blocks allocated before the recording\n"
      << "  events replayed: " << check.events << " of " << recording.trace.events.size() << "\n"
      << "  segment events: " << check.recorded_segment_events << " recorded, " << check.simulated_segment_events
      << " simulated\n"
      << "  block addresses compared with PyTorch's: " << check.addresses_compared << "\n";
  if (!check.ambiguous_sizes.empty()) {
    out << "  ambiguous sizes: " << check.ambiguous_sizes.size()
        << " blocks from before the recording fit two sizing rules; the first: " << check.ambiguous_sizes.front()
        << "\n";
  }
  if (check.partial_releases > 0) {
    out << "  partial releases: " << check.partial_releases
        << " (cached blocks freed inside a failed cudaMalloc, replayed as that failure, not as empty_cache())\n";
  }
  if (check.gc_releases > 0) {
    out << "  garbage collections: " << check.gc_releases
        << " (their segments freed as recorded: a snapshot holds no memory fraction to rerun them)\n";
  }
  if (check.recorded_ooms > 0) {
    out << "  OOMs: " << check.recorded_ooms << " recorded, " << check.replayed_ooms << " failed in the replay too\n";
  }
  out
      << "  reserved peak: recorded " << format_bytes_exact(check.recorded_peak_reserved) << ", simulated "
      << format_bytes_exact(check.simulated_peak_reserved) << "\n";
  if (check.divergence) out << "  first divergence: " << *check.divergence << "\n";
  if (check.final_state) out << "  final state differs: " << *check.final_state << "\n";
  if (check.final_state_compared && !check.final_state) {
    out << "  final state: " << recording.segments_at_end.size() << " segments, every block as in the snapshot\n";
  }
  out << (check.exact() ? "exact" : "diverged") << '\n';
}

}  // namespace

int replay_check_command(std::span<const std::string> args, std::ostream& out) {
  SnapshotArguments snapshot;
  std::string capacity = "1TiB";  // no limit, and small enough for expandable's page table
  po::options_description description("Options");
  description.add_options()("help,h", "this help")(
      "capacity,c", po::value(&capacity)->value_name("SIZE"),
      "device memory for a recording made under memory pressure (default: no limit)");
  if (!parse_snapshot_arguments(args, description, snapshot, kReplayCheckUsage, "replay-check needs a snapshot: allocsim replay-check FILE.pickle", out)) return 0;
  const std::string& file = snapshot.file;
  const std::optional<int>& cuda_device = snapshot.cuda_device;
  const Bytes device_capacity = parse_bytes(capacity);
  if (device_capacity == 0) throw Error("--capacity must be more than 0 bytes");

  const TorchRecording recording = read_torch_recording(file, cuda_device);
  const ReplayCheck check = replay_check(recording, device_capacity);
  print_replay_check(out, file, recording, check);
  return check.exact() ? 0 : 1;
}

}  // namespace allocsim
