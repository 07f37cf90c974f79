// What two replays of the same events must agree on, however the events reached the
// engine (in memory, streamed, loading in the background).
#pragma once

#include <unistd.h>

#include <filesystem>
#include <string>

#include <catch2/catch.hpp>

#include "sim/result.hpp"
#include "sim/trace.hpp"

namespace allocsim::test {

// Every figure of a tenant's result but the wall-clock ones.
inline void check_same(const TenantResult& a, const TenantResult& b) {
  CHECK(a.events == b.events);
  CHECK(a.events_replayed == b.events_replayed);
  CHECK(a.live_lower_bound == b.live_lower_bound);
  CHECK(a.needs == b.needs);
  CHECK(a.peak_requested == b.peak_requested);
  CHECK(a.peak_allocated == b.peak_allocated);
  CHECK(a.peak_reserved == b.peak_reserved);
  CHECK(a.peak_event == b.peak_event);
  CHECK(a.reserved_at_peak == b.reserved_at_peak);
  CHECK(a.largest_free_at_peak == b.largest_free_at_peak);
  CHECK(a.at_peak.by_tag == b.at_peak.by_tag);
  CHECK(a.device_mallocs == b.device_mallocs);
  CHECK(a.device_frees == b.device_frees);
  CHECK(a.allocator_time == b.allocator_time);
  CHECK(a.bytes_moved == b.bytes_moved);
  CHECK(a.end_time == b.end_time);
  CHECK(a.oom_count == b.oom_count);
  CHECK(a.hang_event == b.hang_event);
  REQUIRE(a.ooms.size() == b.ooms.size());
  for (std::size_t i = 0; i < a.ooms.size(); ++i) {
    CHECK(a.ooms[i].event == b.ooms[i].event);
    CHECK(a.ooms[i].kind == b.ooms[i].kind);
  }
  REQUIRE(a.extra.size() == b.extra.size());
  for (std::size_t i = 0; i < a.extra.size(); ++i) CHECK(a.extra[i].value == b.extra[i].value);
}

// Every field the engine and the reports read, names aside (a file names its own trace).
inline void check_same(const Trace& a, const Trace& b) {
  REQUIRE(a.events.size() == b.events.size());
  for (std::size_t i = 0; i < a.events.size(); ++i) {
    INFO("event " << i);
    CHECK(a.events[i].time == b.events[i].time);
    CHECK(a.events[i].id == b.events[i].id);
    CHECK(a.events[i].stream == b.events[i].stream);
    CHECK(a.events[i].op == b.events[i].op);
    CHECK(a.events[i].tag == b.events[i].tag);
  }
  CHECK(a.requested == b.requested);
  CHECK(a.layer == b.layer);
  CHECK(a.layer_names == b.layer_names);
  CHECK(a.info.step_starts == b.info.step_starts);
  CHECK(a.live_lower_bound == b.live_lower_bound);
}

// A path in this test process's own temporary folder.
inline std::filesystem::path scratch(const std::string& name) {
  const auto folder = std::filesystem::temp_directory_path() / ("allocsim_stream_test." + std::to_string(::getpid()));
  std::filesystem::create_directories(folder);
  return folder / name;
}

}  // namespace allocsim::test
