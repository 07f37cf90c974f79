// Our trace format, CSV: header `time_ns,op,id,bytes,stream,tag` (stream and tag may be
// left out), one request a line; `op` is alloc, free, release (empty_cache(): id and
// bytes empty) or sync (the id column names the kind: device, stream, event, or wait:S
// for "this row's stream waits for an event recorded on stream S"; bytes empty); a free
// may leave bytes empty; lines starting with '#' are comments.
// Ids are any text; one may be reused after its free (as addresses are). Readers
// renumber them densely.
#pragma once

#include <cstdint>
#include <filesystem>
#include <istream>
#include <memory>
#include <ostream>
#include <string>
#include <string_view>

#include "sim/event_source.hpp"
#include "sim/trace.hpp"
#include "workloads/reader.hpp"

namespace allocsim {

// Throws Error "NAME:LINE: what" on the first bad line; NAME is `name` (the file path).
// The whole text in one buffer: ids become views into it while parsing, no row allocates.
// Fuzz targets call this one.
Trace parse_csv_trace(std::string_view text, const std::string& name);
Trace read_csv_trace(std::istream& in, const std::string& name);  // reads it all, then parses
// Memory-mapped (a pipe or FIFO is read into memory instead). `progress`: told of the
// events as they are built (a load in the background).
Trace read_csv_trace_file(const std::filesystem::path& path, TraceProgress* progress = nullptr);

// The rows of a CSV text as a stream of events (sim/event_source.hpp: ids become slots, a
// freed one taken again first), checked as the whole read checks them, with the same
// errors: what a replay with --stream reads. `text` must outlive the source and its reopen()s.
std::unique_ptr<EventSource> csv_trace_stream(std::string_view text, const std::string& name);
// A file streamed: memory-mapped, its pages given back as the rows are read, so that a
// replay holds the live allocations, never the file or its events. The header and the
// first window are read here: their errors come before any replay.
std::shared_ptr<const EventSourceFactory> csv_trace_file_stream(const std::filesystem::path& path);

// By content: the first line that is not a comment is a header naming time_ns and op; by
// name: a path ending in .csv.
Claim claims_csv_trace(std::string_view spec, std::string_view head);

void write_csv_trace(const Trace& trace, std::ostream& out);
void write_csv_trace_file(const Trace& trace, const std::filesystem::path& path);  // atomic

}  // namespace allocsim
