// Offline dynamic storage allocation: every allocation of a trace is known ahead (its
// size and its lifetime from alloc to free), and each gets a fixed offset in one arena so
// that no two allocations alive at the same time overlap. Finding the smallest arena is
// NP-hard; static memory planners use greedy heuristics, and so do we:
// - greedy by size (TFLite's GreedyBySize, XLA's GlobalDecreasingSizeBestFitHeap): the
//   largest first, each into the best-fitting gap among the already placed allocations
//   that overlap it in time;
// - each also with the lowest gap that holds it instead of the best-fitting one;
// - the same greedy in other orders: by breadth (the most live bytes during its
//   lifetime first, TFLite's GreedyByBreadth), by lifetime, by area (size x lifetime);
// - online best fit and online first fit in time order over an unbounded arena (cheap:
//   O(n log n), first fit O(n x free ranges)).
// The greedy ones cost O(conflicting pairs) at most; they run only when the trace has at
// most `max_pairs` of them, the online ones always. The smallest arena wins. The plan is a
// function of the sizes and lifetimes alone: the last plans made are remembered, so a sweep
// plans a trace once for all its capacities.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sim/trace.hpp"

namespace allocsim {

// How the greedy heuristics find the allocations already placed beside one in time: each
// way finds the same gap (offline_plan.cpp); `cheaper` picks per allocation, the others are
// for the tests that compare them.
enum class GapSearch : std::uint8_t { cheaper, neighbours, by_offset };

struct OfflinePlanOptions {
  Bytes alignment = 256;                  // sizes and offsets are multiples of this
  std::uint64_t max_pairs = 30'000'000;   // budget of time-overlapping pairs for the greedy heuristics
  GapSearch gap_search = GapSearch::cheaper;
};

// Allocation i of the trace takes [offset[i], offset[i] + size(trace, i)) of the arena. The
// sizes are not kept: they are the trace's, aligned up, and a plan of the online heuristics
// then holds 8 bytes an allocation.
struct OfflinePlan {
  std::vector<Bytes> offset;  // by AllocId
  Bytes alignment = 256;      // of every size and offset
  Bytes arena = 0;            // bytes the plan needs: the largest offset + size
  Bytes aligned_lower_bound = 0;  // max over time of live aligned sizes: no plan needs less
  std::uint64_t pairs = 0;    // allocations alive at the same time, counted in pairs
  std::string heuristic;      // the one that won

  // The request aligned up (0 for a zero-byte request).
  Bytes size(const Trace& trace, std::size_t i) const { return align_up(trace.requested[i], alignment); }
};

OfflinePlan plan_offline(const Trace& trace, const OfflinePlanOptions& options = {});

// The first two allocations that live at the same time and overlap in the arena, as a
// message; nullopt when the plan is sound. O(n log n): tests call it.
std::optional<std::string> find_plan_conflict(const Trace& trace, const OfflinePlan& plan);

}  // namespace allocsim
