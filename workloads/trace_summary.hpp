// What `allocsim trace info` says of a trace: counts, span, the live lower bound, and the
// requests by stream and by tag. Computed from the trace alone, without a policy.
#pragma once

#include <array>
#include <cstddef>
#include <map>

#include "sim/trace.hpp"

namespace allocsim {

struct RequestCount {
  std::size_t allocations = 0;
  Bytes bytes = 0;  // requested, summed over the allocations
};

struct TraceSummary {
  std::size_t events = 0;
  std::size_t allocations = 0;
  std::size_t frees = 0;
  std::size_t releases = 0;   // empty_cache()
  std::size_t syncs = 0;
  std::size_t live_at_end = 0;       // allocations never freed
  Bytes live_bytes_at_end = 0;
  Nanos first_time = 0;
  Nanos last_time = 0;
  Bytes live_lower_bound = 0;
  std::size_t lower_bound_event = 0;  // the first event at which the bound is reached
  Bytes largest_allocation = 0;
  std::size_t steps = 0;
  std::size_t layers = 0;
  std::map<Stream, RequestCount> streams;
  std::array<RequestCount, kTagCount> tags{};
};

TraceSummary summarize(const Trace& trace);

}  // namespace allocsim
