// What replaying a PyTorch recording asks of a policy beyond Policy: to start where the
// recording began (the segments the real allocator already held, with their live blocks
// at the same offsets), to show its segments and blocks as a snapshot lists them, and to
// give back one segment as the real garbage collection did. A view over a policy of the
// caching family (policies/caching_adoption.cpp); replay-check and the what-if replay of
// a recording use it, nothing else does.
#pragma once

#include <optional>
#include <span>
#include <vector>

#include "sim/policy.hpp"

namespace allocsim {

class RecordingAdoption {
 public:
  // A block the recording began with, inside its segment.
  struct HeldBlock {
    Bytes offset;  // from the segment's start
    Bytes size;    // the block's size, rounded, with any unsplit slack
    AllocId id;
    Bytes requested;
  };
  struct LaidBlock {
    Addr addr;
    Bytes size;
    bool allocated;
    friend bool operator==(const LaidBlock&, const LaidBlock&) = default;
  };
  struct SegmentLayout {
    Addr addr;
    Bytes size;
    Stream stream;
    bool small;
    std::vector<LaidBlock> blocks;  // in address order
  };

  virtual ~RecordingAdoption() = default;

  // Whether the policy's segments are expandable (every one is, or none is).
  virtual bool expandable() const = 0;
  // Takes a segment of `size` from the device and holds `allocated` in it where the real
  // allocator held them; the gaps become cached free blocks. Returns the segment's address,
  // or nothing when the device has no room for it (a smaller card than the recording's).
  virtual std::optional<Addr> adopt_segment(Bytes size, Stream stream, bool small,
                                            std::span<const HeldBlock> allocated) = 0;
  // The same for an expandable segment: reserves a range, maps its first `mapped` bytes
  // (whole pages) in one map call and holds `allocated` there; the gaps become cached free
  // blocks, the rest of the range unmapped space. Returns the range's base, or nothing
  // when the device has no room for the pages.
  virtual std::optional<Addr> adopt_expandable_range(Bytes mapped, Stream stream, bool small,
                                                     std::span<const HeldBlock> allocated) = 0;
  // Every segment with its blocks, in address order, as torch.cuda.memory_snapshot() lists
  // them (an expandable range shows one segment per mapped run).
  virtual std::vector<SegmentLayout> layout() const = 0;
  // Gives back the native segment at `addr` when it is wholly free and cached, as PyTorch's
  // garbage_collect_cached_blocks did (a snapshot does not record the memory fraction that
  // chose it). False, changing nothing, when not.
  virtual bool release_segment(Addr addr) = 0;
};

}  // namespace allocsim
