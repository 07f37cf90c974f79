// .atrace: allocsim's binary trace, made to be replayed straight from a memory map.
//
// Layout (little-endian; docs/atrace.md has the table):
// - a 72-byte header: magic, version, flags, event count, slot count, allocation count,
//   start time, live lower bound, payload bytes, FNV-1a-64 checksum of the payload;
// - the payload: one 16-byte record per event, then the step starts (flag 1) and the
//   layer names with each allocation's layer (flag 2).
// Ids are slots: an alloc takes the slot freed most recently (a new one when none is
// free), so the replay's per-allocation state is sized by the live set.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string_view>

#include "sim/event_source.hpp"
#include "sim/trace.hpp"
#include "workloads/reader.hpp"

namespace allocsim {

inline constexpr std::string_view kAtraceMagic{"\x89" "ATRACE\n", 8};
inline constexpr std::uint32_t kAtraceVersion = 1;
inline constexpr std::size_t kAtraceHeaderBytes = 72;
inline constexpr std::size_t kAtraceRecordBytes = 16;

// The whole file in memory, parsed and validated: the fuzz target's entry point. `name`
// names the input in errors ("FILE: offset N: ...") and becomes the trace's name.
// `progress`: told of the events as they are built (a load in the background).
Trace parse_atrace(std::string_view bytes, std::string_view name, TraceProgress* progress = nullptr);
Trace read_atrace_file(const std::filesystem::path& path, TraceProgress* progress = nullptr);  // memory-mapped
Claim claims_atrace(std::string_view spec, std::string_view head);

// The file's events without loading them: a memory-mapped cursor that keeps only a window
// and the live slots resident. The checksum is verified as the events go by; a mismatch
// is an Error at the end of the pass.
std::shared_ptr<const EventSourceFactory> atrace_stream(const std::filesystem::path& path);

// Writes `trace` atomically (a temporary, then rename).
void write_atrace_file(const Trace& trace, const std::filesystem::path& path);
// Writes what `source` hands out (one pass), atomically: a generator into a file without
// the trace ever being in memory.
void write_atrace_file(EventSource& source, const std::filesystem::path& path);

}  // namespace allocsim
