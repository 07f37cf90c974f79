// PyTorch memory snapshots (torch.cuda.memory._dump_snapshot pickles) as workloads. The
// pickle is read by decode_pickle, which refuses every opcode that would make anything but
// plain data: a pickle can run code, and snapshots come from strangers. The snapshot
// then becomes a trace and a recording (read_snapshot_recording: workloads/torch_recording.hpp).
#pragma once

#include <filesystem>
#include <string_view>

#include "sim/trace.hpp"
#include "workloads/reader.hpp"

namespace allocsim {

// The recording's trace (read_torch_recording), its layers named by layer_of_frames.
// Throws Error with a one-line reason naming the file when it cannot be converted.
// `options.cuda_device`: whose trace (none: the only device with one).
Trace read_torch_snapshot(const std::filesystem::path& pickle, const LoadOptions& options = {});

// By content: a pickle's first bytes (0x80, then protocol 2 to 5), or a JSON object whose first
// key is "segments" or "device_traces" (the dict saved with json.dump); by name: a path ending
// in .pickle.
Claim claims_torch_snapshot(std::string_view spec, std::string_view head);

}  // namespace allocsim
