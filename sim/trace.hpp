// A trace: the ordered requests of one process, flat and validated once, at load.
#pragma once

#include <cstddef>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "sim/types.hpp"

namespace allocsim {

struct TraceInfo {
  TraceInfo(std::string name = {}, std::string source = {}) : name(std::move(name)), source(std::move(source)) {}

  std::string name;    // the workload spec or file it came from
  std::string source;  // how it was made: "csv", "random", ...
  // The first event of each training step, ascending; the first step starts at event 0
  // (setup is part of it, as in a real process's first iteration). Empty: no steps.
  std::vector<std::size_t> step_starts;
  bool generation = false;  // the steps are a generation's: the prefill, then one per decoded token
};

// The step (1-based) that event `event` belongs to; nullopt for a trace without steps.
std::optional<std::size_t> step_of(const TraceInfo& info, std::size_t event);

// Contract (established by TraceBuilder, relied on by the engine):
// - ids are dense 0..allocations()-1, each allocated exactly once, in order of first use;
// - every free names a live id; no id is freed twice; times never decrease;
// - a free event carries its allocation's stream and tag.
// Allocations still live at the end are allowed: the program exited holding them.
class Trace {
 public:
  std::vector<Event> events;
  std::vector<Bytes> requested;  // by AllocId: the bytes the program asked for
  std::vector<std::uint32_t> layer;  // by AllocId, into layer_names; empty when the source has none
  std::vector<std::string> layer_names;
  TraceInfo info;
  Bytes live_lower_bound = 0;    // max over time of the requested bytes alive

  std::size_t allocations() const { return requested.size(); }
  Bytes bytes_of(AllocId id) const { return requested[index_of(id)]; }
};

class TraceProgress;  // sim/trace_progress.hpp

// The checks of TraceBuilder that a stream of events makes too (workloads/csv_trace.cpp's
// stream): `event` is the index of the event being added. Throw Error naming it.
// Inline, since a reader makes one or both per row; the errors are built out of line.
[[noreturn]] void throw_time_goes_back(std::size_t event, Nanos previous, Nanos time);
[[noreturn]] void throw_request_too_large(std::size_t event, Bytes bytes);
inline void check_event_time(std::size_t event, Nanos previous, Nanos time) {  // times never decrease
  if (time < previous) [[unlikely]] throw_time_goes_back(event, previous, time);
}
inline void check_request(std::size_t event, Bytes bytes, Bytes live_bytes) {  // the size limit, no overflow
  if (bytes > kMaxRequestBytes || bytes > ~Bytes{0} - live_bytes) [[unlikely]] throw_request_too_large(event, bytes);
}

// Appends validated events. Errors are allocsim::Error naming the event index; readers
// catch and prefix their own position (file:line).
class TraceBuilder {
 public:
  explicit TraceBuilder(TraceInfo info);
  ~TraceBuilder();
  TraceBuilder(TraceBuilder&&) = default;
  TraceBuilder& operator=(TraceBuilder&&) = default;
  void reserve(std::size_t events);
  // Tells `progress` how many events are built, every so often, so that a replay reads them
  // while the rest loads (sim/background_trace.hpp). Reserves room for at most `events`
  // events and `allocations` allocations, once: the arrays a replay reads never move, and a
  // trace that outgrows them is an Error (its reader's bounds were wrong). A builder that
  // dies unfinished (its reader failed) leaves its arrays to `progress`, so that a replay
  // still reading them reads live memory; once finish() has let the trace go, the reader
  // must throw nothing before the trace reaches the progress (TraceProgress::finish).
  void report_to(TraceProgress& progress, std::size_t events, std::size_t allocations);
  Bytes live_lower_bound() const { return trace_.live_lower_bound; }  // so far

  AllocId alloc(Nanos time, Bytes bytes, Stream stream = 0, Tag tag = Tag::other);
  // The same, made by a named layer; the first call makes the trace keep layers for all.
  AllocId alloc(Nanos time, Bytes bytes, Stream stream, Tag tag, std::string_view layer_name);
  void free(Nanos time, AllocId id);
  void release(Nanos time);
  void sync(Nanos time, const Sync& sync);
  // The next event begins a training step (the first step always begins at event 0).
  void begin_step();

  bool is_live(AllocId id) const;
  Bytes bytes_of(AllocId id) const { return trace_.bytes_of(id); }
  std::size_t size() const { return trace_.events.size(); }
  Trace finish() &&;  // throws on an empty trace

 private:
  void check_time(Nanos time);
  void append(const Event& event);
  void report();

  struct Allocation {
    Stream stream;
    Tag tag;
    bool live;
  };

  Trace trace_;
  std::vector<Allocation> allocations_;  // by AllocId, while building only
  std::unordered_map<std::string, std::uint32_t> layer_index_;
  Bytes live_bytes_ = 0;
  TraceProgress* progress_ = nullptr;
  std::size_t next_report_ = std::numeric_limits<std::size_t>::max();  // events built when progress_ hears next
};

}  // namespace allocsim
