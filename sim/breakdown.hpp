// What was alive at one moment of a trace, by tag and by layer: the memory breakdown a
// profiler shows at the peak. Computed from the trace alone, after the replay.
#pragma once

#include <array>
#include <cstddef>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "sim/trace.hpp"

namespace allocsim {

struct Breakdown {
  std::size_t event = 0;                           // just after this event
  std::array<Bytes, kTagCount> by_tag{};           // requested bytes alive, by tag
  std::vector<std::pair<std::string, Bytes>> top_layers;  // the largest first; empty without layers

  Bytes total() const {  // requested bytes alive, every tag
    Bytes bytes = 0;
    for (Bytes tag_bytes : by_tag) bytes += tag_bytes;
    return bytes;
  }
};

// `skipped`: allocations the replay dropped at an OOM (sorted), which were never live.
Breakdown live_breakdown(const Trace& trace, std::size_t event, std::span<const AllocId> skipped = {},
                         std::size_t top = 5);

}  // namespace allocsim
