// PyTorch memory snapshots (torch.cuda.memory._dump_snapshot pickles) as workloads. The
// pickle is read by decode_pickle, which refuses every opcode that would make anything but
// plain data: a pickle can run code, and snapshots come from strangers. The snapshot
// then becomes our CSV trace and a JSON sidecar (convert_snapshot), read as any trace.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "sim/trace.hpp"
#include "workloads/reader.hpp"
#include "workloads/snapshot_conversion.hpp"

namespace allocsim {

// The recording's trace (read_torch_recording), its layers named by layer_of_frames.
// Throws Error with a one-line reason naming the file when it cannot be converted.
// `options.cuda_device`: whose trace (none: the only device with one).
Trace read_torch_snapshot(const std::filesystem::path& pickle, const LoadOptions& options = {});

// By content: a pickle's first bytes (0x80, then protocol 2 to 5), or a JSON object whose first
// key is "segments" or "device_traces" (the dict saved with json.dump); by name: a path ending
// in .pickle.
Claim claims_torch_snapshot(std::string_view spec, std::string_view head);

// A snapshot's pickle bytes (or the same dict saved as JSON: workloads/snapshot_json.hpp) as
// our CSV trace and JSON sidecar (settings, segments, segment events). Errors name `name`;
// `source` (default: name's file name) is what the texts mention.
ConverterOutput convert_snapshot_bytes(std::string_view pickle_bytes, const std::string& name,
                                       std::optional<int> cuda_device = {});
// The same for a file; Error "PATH: cannot open" when it cannot be read.
ConverterOutput convert_snapshot_file(const std::filesystem::path& pickle, std::optional<int> cuda_device = {});

// The converted CSV as a trace named after `pickle`; Error "PICKLE (converted):LINE: ...".
Trace parse_converted_trace(std::string_view csv, const std::string& pickle);

}  // namespace allocsim
