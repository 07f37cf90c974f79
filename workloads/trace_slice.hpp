// A part of a trace, as a trace of its own (`allocsim trace slice`): the events of an
// index or time range. Contract:
// - blocks alive at the cut (allocated before the range, not yet freed) become allocations
//   at the slice's start, in the order they were made, with their size, stream, tag and
//   layer; their frees inside the range are kept;
// - frees after the range are dropped: what is alive at the end stays alive, as in a
//   program that stopped there;
// - times start at the cut (the first event's time, or the range's start time);
// - step boundaries inside the range are kept, the part before the first one is step 1.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

#include "sim/trace.hpp"

namespace allocsim {

// [begin, end), either end open: event indices or nanoseconds of the trace's clock.
struct SliceRange {
  enum class By : std::uint8_t { events, time };
  By by = By::events;
  std::optional<std::uint64_t> begin;
  std::optional<std::uint64_t> end;
};

struct TraceSlice {
  Trace trace;
  std::size_t first_event = 0;  // of the original trace: the range is [first_event, end_event)
  std::size_t end_event = 0;
  std::size_t carried_in = 0;     // blocks alive at the cut, allocated at the start
  std::size_t frees_dropped = 0;  // of blocks alive at the end, freed after it in the original
};

// Throws Error when the range holds no event.
TraceSlice slice_trace(const Trace& trace, const SliceRange& range);

}  // namespace allocsim
