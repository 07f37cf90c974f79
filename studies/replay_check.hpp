// allocsim replay-check: replays a PyTorch memory snapshot through `caching` with the
// settings it was recorded with, starting from the allocator state the recording began
// in, and compares what the policy asks of the device with what PyTorch asked: every
// segment reserved and released, in order, at the same event; then the final layout
// against the snapshot's own segments and blocks.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "policies/caching.hpp"
#include "sim/spec.hpp"
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
  std::size_t addresses_compared = 0;
  // Blocks allocated before the recording and freed in it whose size two of PyTorch's
  // rules fit (a truncated ring): what each could be and which one the replay took.
  std::vector<std::string> ambiguous_sizes;
  std::size_t partial_releases = 0;  // releases replayed as a failed cudaMalloc's, not as empty_cache()
  std::size_t gc_releases = 0;       // garbage collections: the segments they freed, freed as recorded
  std::vector<std::size_t> releases_in_allocs;  // the release rows of both kinds: no empty_cache() call
  std::size_t recorded_ooms = 0;
  std::size_t replayed_ooms = 0;  // recorded OOMs the replay failed too  // allocations placed where PyTorch placed them, checked
  Bytes recorded_peak_reserved = 0;    // the start's segments plus the recorded segment events
  Bytes simulated_peak_reserved = 0;
  // The replay's allocated bytes at their peak over the trace's allocs: block sizes, a
  // block's unsplit rest included, as PyTorch counts them (max_memory_allocated).
  Bytes simulated_peak_allocated = 0;
  std::vector<std::string> settings_not_modelled;  // recorded PYTORCH_CUDA_ALLOC_CONF entries the spec lacks
  std::vector<std::string> settings_without_effect;  // entries that change nothing a replay allocates
  std::optional<std::string> divergence;  // the first trace event where the replay differs
  std::optional<std::string> final_state;  // how the final layout differs from the snapshot's
  bool final_state_compared = false;
  bool exact() const { return !divergence && !final_state && final_state_compared; }
};

// The caching policy spec PyTorch's recorded allocator settings amount to: the settings'
// own fields, and PYTORCH_CUDA_ALLOC_CONF's keys they do not carry (max_non_split_rounding_mb).
Spec caching_spec_for(const TorchAllocatorSettings& settings);

// Whether PyTorch ran with expandable segments: the settings say so, a segment is
// expandable, or the trace maps or unmaps (an old snapshot records no settings).
bool recorded_expandable(const TorchRecording& recording);

// The spec the recording's allocator amounts to: caching_spec_for's, named `expandable`
// when recorded_expandable.
Spec recorded_spec(const TorchRecording& recording);

// The recorded roundup_power2_divisions as the caching policy reads them.
RoundupDivisions recorded_divisions(const TorchAllocatorSettings& settings);

// Throws Error naming what `command` cannot rebuild yet: two mapped pieces of one
// expandable range at the start, native segments in a recording with expandable ones,
// private pools.
void refuse_unrebuildable(const TorchRecording& recording, std::string_view command);

// The recorded PYTORCH_CUDA_ALLOC_CONF, entry by entry ("key:value"), sorted into those the
// caching spec cannot model and those that change nothing a replay allocates (pinned host
// memory, locking); every other key is in caching_spec_for's spec.
struct UnmappedSettings {
  std::vector<std::string> not_modelled;
  std::vector<std::string> without_effect;
};
UnmappedSettings unmapped_settings(const TorchAllocatorSettings& settings);

// Replays on a device that returns each segment at the address the recording shows (the
// starting segments adopted at theirs) and compares, event by event, every segment
// reserved or released and every block's address with PyTorch's; the divergence reported
// is the one at the earliest trace event. Throws Error when the recording cannot be
// rebuilt (see refuse_unrebuildable; a block outside every
// segment, a device too small for the start).
ReplayCheck replay_check(const TorchRecording& recording, Bytes capacity);

}  // namespace allocsim
