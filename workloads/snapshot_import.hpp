// PyTorch memory snapshots (torch.cuda.memory._dump_snapshot pickles) as workloads. The
// conversion runs tools/torch_snapshot.py, whose unpickler refuses every global: a pickle
// can run code, and snapshots come from strangers.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "sim/trace.hpp"
#include "workloads/reader.hpp"

namespace allocsim {

// Throws Error with the converter's one-line reason when the file cannot be converted.
// `options.cuda_device`: whose trace (none: the only device with one).
Trace read_torch_snapshot(const std::filesystem::path& pickle, const LoadOptions& options = {});

// By content: a pickle's first bytes (0x80, then protocol 2 to 5); by name: a path ending in .pickle.
Claim claims_torch_snapshot(std::string_view spec, std::string_view head);

// What tools/torch_snapshot.py writes: our CSV trace and a JSON sidecar (settings, segments,
// segment events). Throws Error with the converter's one-line reason when it fails.
struct ConverterOutput {
  std::string csv;
  std::string sidecar;
};
ConverterOutput run_snapshot_converter(const std::filesystem::path& pickle, std::optional<int> cuda_device = {});

// The converter's CSV as a trace named after `pickle`; Error "PICKLE (converted):LINE: ...".
Trace parse_converted_trace(std::string_view csv, const std::string& pickle);

struct ConvertedSnapshot {
  Trace trace;
  std::string sidecar;  // the converter's JSON: settings, segments, segment events
};
ConvertedSnapshot convert_torch_snapshot(const std::filesystem::path& pickle, std::optional<int> cuda_device = {});

}  // namespace allocsim
