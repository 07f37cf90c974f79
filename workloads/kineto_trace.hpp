// The PyTorch profiler's Chrome trace (Kineto, `prof.export_chrome_trace()` or
// tensorboard_trace_handler's `*.pt.trace.json`, ../shared/reference/formats.md section 2)
// as a workload: its `[memory]` instant events, one per call of the caching allocator with
// `profile_memory=True`. args (PyTorch's profiler_kineto.cpp / Kineto's trace sink):
// `Device Type` (1 = CUDA; CPU events are left out), `Device Id`, `Addr` (decimal),
// `Bytes` (positive: an allocation; negative: a free), `Total Allocated`, `Total
// Reserved` (left out by some versions), and in newer traces `Profiler Event Index`.
// - Allocations and frees pair by address on the chosen device (LoadOptions::cuda_device,
//   else the only CUDA device with events). A free of a block allocated before profiling
//   began becomes an allocation at the trace's start.
// - Order: by `ts` (microseconds, may be fractional). The event index (`Profiler Event
//   Index` or `Ev Idx`) counts per thread (the autograd thread and the main thread each
//   have their own), so it orders only events of one thread at one time. Equal times: by
//   `tid` (numbers before names), then by the index when every event has one, else by the
//   file's order.
// - `Total Allocated` is checked while reading: after each event it must be what it was
//   before the first event plus the bytes of every event since. A mismatch is an Error
//   naming the event: events are missing, or not in the order the allocator made them.
// - Traces from PyTorch 1.8 and 1.9 have no `Addr` (a memory curve, not allocations):
//   refused. `[OutOfMemory]` events are not requests the program got: left out.
// What the format lacks, and what is assumed instead: requested sizes (`Bytes` is the
// caching allocator's block size, already rounded; a replay through `caching` rounds
// again, which leaves it unchanged), streams (everything on stream 0), tags and layers
// (every allocation is `other`).
#pragma once

#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "sim/trace.hpp"
#include "workloads/reader.hpp"

namespace allocsim {

struct KinetoTrace {
  Trace trace;
  int device = 0;
  std::size_t preexisting = 0;    // blocks seen only freed, allocated at the start
  std::size_t other_events = 0;   // [memory] events of the CPU or another device, left out
};

// Throws Error "NAME: what" (the event named by its position among [memory] events and ts).
KinetoTrace parse_kineto_trace(std::string_view text, const std::string& name, std::optional<int> cuda_device = {});
KinetoTrace read_kineto_trace_file(const std::filesystem::path& path, std::optional<int> cuda_device = {});

// By content: a JSON object or array whose first bytes name `traceEvents` or a `ph` field;
// by name: a path ending in .json or .json.gz.
Claim claims_kineto_trace(std::string_view spec, std::string_view head);

}  // namespace allocsim
