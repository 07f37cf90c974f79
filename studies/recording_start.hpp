// The allocator state a PyTorch recording began in, rebuilt inside a policy: replay-check
// and the what-if replay both start from it, so that the recording's trace, which frees
// blocks allocated before it began, replays from where the real allocator stood.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "policies/caching.hpp"
#include "policies/recording_adoption.hpp"
#include "sim/policy.hpp"
#include "studies/recorded_address_device.hpp"
#include "workloads/torch_recording.hpp"

namespace allocsim {

struct RebuiltStart {
  std::vector<Block> live;             // indexed by allocation id; the pre-existing blocks set
  std::map<Addr, Addr> simulated_at;   // recorded segment address -> the policy's (adopted only)
  Bytes reserved = 0;                  // the starting segments' bytes (adopted only)
  std::vector<std::string> ambiguous_sizes;  // blocks two of PyTorch's sizing rules fit (rule 9)
  std::vector<AllocId> unserved;       // pre-existing blocks the device or policy had no room for
  Bytes live_bytes = 0;                // the pre-existing blocks' bytes, as held (requested where unserved)
  std::size_t released_segments = 0;   // cached free segments of the start given back for room
  Bytes released = 0;                  // their bytes
};

// Adopts every segment the recording began with into `policy`, holding the blocks
// allocated before it at their recorded offsets and sizes (a size the snapshot no longer
// shows is inferred with `divisions`, PyTorch's rounding). Throws Error when a block lies
// in no recorded segment or the trace's leading allocs do not match the blocks. An
// expandable segment (a mapped range, as a snapshot lists it) is adopted as the start of
// its address range, reserved at its address, its pages mapped; the rest of the range
// unmapped. The policy's kind must be the segments' (native or expandable).
// On a device too small for them all (a what-if on a smaller card), PyTorch's OOM path
// decides: a segment the device has no room for is retried after the policy releases its
// wholly free cached blocks (`policy`, the view's own policy); a free segment that still
// finds no room is released too (counted in `released`), and the blocks of a segment that
// does not are `unserved`.
RebuiltStart adopt_recorded_start(const TorchRecording& recording, RecordingAdoption& view, Policy& policy,
                                  const RoundupDivisions& divisions);

// For a policy that cannot adopt PyTorch's segments: the blocks live at the start (the
// trace's leading allocs) allocated through it in address order, as if it had served
// them; those it cannot serve are listed in `unserved` and left out.
RebuiltStart place_recorded_start(const TorchRecording& recording, Policy& policy);

// Where the recording reserved memory, for a RecordedAddressDevice: the starting native
// segments, then every segment_alloc, in order; and the starting expandable segments (each
// range's mapped prefix), then every segment_map, in order.
RecordedAddressDevice::Placements recorded_placements(const TorchRecording& recording);


}  // namespace allocsim
