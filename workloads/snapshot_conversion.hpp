// A PyTorch memory snapshot (the dict torch.cuda.memory._snapshot() returns, as
// decode_pickle reads it) turned into our CSV trace and a JSON sidecar of what it says
// about the allocator itself (settings, segments, segment events, OOMs, frames). The rules
// (snapshot_conversion.cpp's opening comment) were the Python converter's; the texts are
// what it wrote, so every recording converts as it always did.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "workloads/pickle_reader.hpp"

namespace allocsim {

struct ConverterOutput {
  std::string csv;      // trace CSV, with comments saying where it came from and what was guessed
  std::string sidecar;  // JSON: what parse_torch_sidecar reads
};

// The layer of an allocation whose stack a snapshot recorded (`frames`, innermost first):
// its innermost frame of the program's own Python code, `model.py:42 forward` (PyTorch's
// own Python, every C++ frame and Python's bootstrap are skipped); for an allocation made on
// autograd's engine thread with no such frame, `autograd backward`; none otherwise (no
// frames recorded). The one rule every output's layer names come from.
inline constexpr std::string_view kAutogradBackward = "autograd backward";
std::optional<std::string> layer_of_frames(const PickleValue& frames);

// Throws Error "ORIGIN: reason" naming the snapshot's entry (device_traces[0][812],
// segments[3].blocks[2]) on one printable line. `source`: the file name the texts mention.
// `cuda_device`: whose trace (none: the only device with one; several: an error listing them).
ConverterOutput convert_snapshot(const PickleValue& snapshot, const std::string& origin, const std::string& source,
                                 std::optional<int> cuda_device = {});

}  // namespace allocsim
