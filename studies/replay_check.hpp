// allocsim replay-check: replays a PyTorch memory snapshot through `caching` with the
// settings it was recorded with, starting from the allocator state the recording began
// in, and compares what the policy asks of the device with what PyTorch asked: every
// segment reserved and released, in order, at the same event; then the final layout
// against the snapshot's own segments and blocks.
#pragma once

#include <optional>
#include <string>

#include "sim/units.hpp"
#include "workloads/torch_recording.hpp"

namespace allocsim {

struct ReplayCheck {
  std::string policy;                  // the caching spec the settings became
  std::size_t events = 0;              // trace events replayed
  std::size_t preexisting = 0;         // blocks allocated before the recording, rebuilt
  std::size_t segments_at_start = 0;   // segments the recording began with, rebuilt
  std::size_t recorded_segment_events = 0;
  std::size_t simulated_segment_events = 0;
  Bytes recorded_peak_reserved = 0;    // the start's segments plus the recorded segment events
  Bytes simulated_peak_reserved = 0;
  std::optional<std::string> divergence;  // the first segment event that differs
  std::optional<std::string> final_state;  // how the final layout differs from the snapshot's
  bool final_state_compared = false;
  bool exact() const { return !divergence && !final_state && final_state_compared; }
};

// The caching policy spec PyTorch's recorded allocator settings amount to.
std::string caching_spec_for(const TorchAllocatorSettings& settings);

// Throws Error when the recording cannot be rebuilt (an expandable-segments recording,
// a block outside every segment, a device too small for the start).
ReplayCheck replay_check(const TorchRecording& recording, Bytes capacity);

}  // namespace allocsim
