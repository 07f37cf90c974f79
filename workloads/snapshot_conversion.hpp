// A PyTorch memory snapshot (the dict torch.cuda.memory._snapshot() returns, as
// decode_pickle or decode_snapshot_json reads it) read into a TorchRecording: its trace,
// built through the TraceBuilder as every reader's, and what it says about the allocator
// itself (settings, segments, segment events, OOMs, frames), in one pass with no text in
// between. The rules (snapshot_conversion.cpp's opening comment) were the Python
// converter's, so every recording reads as it always did.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "workloads/pickle_reader.hpp"
#include "workloads/torch_recording.hpp"

namespace allocsim {

// The layer of an allocation whose stack a snapshot recorded (`frames`, innermost first):
// its innermost frame of the program's own Python code, `model.py:42 forward` (PyTorch's
// own Python, every C++ frame and Python's bootstrap are skipped); for an allocation made on
// autograd's engine thread with no such frame, `autograd backward`; none otherwise (no
// frames recorded). The one rule every output's layer names come from.
inline constexpr std::string_view kAutogradBackward = "autograd backward";
std::optional<std::string> layer_of_frames(const PickleValue& frames);

// Contract:
// - the trace is named `origin` (TraceInfo format "torch snapshot"), its layers named by
//   layer_of_frames; `addresses`, `preexisting`, `alloc_frames` follow its allocations;
// - throws Error "ORIGIN: reason" naming the snapshot's entry (device_traces[0][812],
//   segments[3].blocks[2], allocator_settings) on one printable line;
// - `cuda_device`: whose trace (none: the only device with one; several: an error listing them).
TorchRecording read_snapshot_recording(const PickleValue& snapshot, const std::string& origin,
                                       std::optional<int> cuda_device = {});

}  // namespace allocsim
