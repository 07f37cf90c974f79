// PyTorch memory snapshots (torch.cuda.memory._dump_snapshot pickles) as workloads. The
// conversion runs tools/torch_snapshot.py, whose unpickler refuses every global: a pickle
// can run code, and snapshots come from strangers.
#pragma once

#include <filesystem>
#include <string>

#include "sim/trace.hpp"

namespace allocsim {

// Throws Error with the converter's one-line reason when the file cannot be converted.
Trace read_torch_snapshot(const std::filesystem::path& pickle);

struct ConvertedSnapshot {
  Trace trace;
  std::string sidecar;  // the converter's JSON: settings, segments, segment events
};
ConvertedSnapshot convert_torch_snapshot(const std::filesystem::path& pickle);

}  // namespace allocsim
