#include "studies/replay_check.hpp"

#include <filesystem>

#include <catch2/catch.hpp>

#include "shared_traces.hpp"
#include "sim/error.hpp"
#include "workloads/torch_recording.hpp"

namespace allocsim {
namespace {

using Action = RecordedSegmentEvent::Action;
constexpr Addr kStart = 0x10000000;  // the segment the recording began with
constexpr Addr kLater = 0x20000000;  // the one PyTorch reserved during it

// Worked by hand, defaults, one stream. The recording begins with one 20 MiB segment
// holding P0 (9 MiB + 100 B) at offset 0 and P1 (10 MiB) at 9.5 MiB; both are freed in
// the trace, so their block sizes are inferred: each rounds to less than the room before
// the next block, and the rest (<= 1 MiB) was not split off, so P0 is 9.5 MiB and P1
// 10.5 MiB. (Either way the rest merges with the block when it is freed: the inference
// only decides allocated bytes while the block lives.)
//   event 2 free P0: a 9.5 MiB free block
//   event 3 X = 9.5 MiB: best fit is P0's block exactly, no device call
//   event 4 Y = 4 MiB: nothing cached; cudaMalloc 20 MiB (segment_alloc), split
//   event 5 free P1, event 6 free Y: Y merges back into a whole free 20 MiB segment
//   event 7 empty_cache(): that segment goes back (segment_free)
// Final: the first segment holds X (9.5 MiB, allocated), then 10.5 MiB free.
TorchRecording worked_example() {
  TorchRecording recording;
  TraceBuilder trace(TraceInfo{"worked", "test"});
  const AllocId p0 = trace.alloc(0, 9_MiB + 100);
  const AllocId p1 = trace.alloc(0, 10_MiB);
  trace.free(1, p0);
  trace.alloc(2, 9_MiB + 512_KiB);
  const AllocId y = trace.alloc(3, 4_MiB);
  trace.free(4, p1);
  trace.free(5, y);
  trace.release(6);
  recording.trace = std::move(trace).finish();
  recording.preexisting = {{kStart, 9_MiB + 100, 0, std::nullopt}, {kStart + 9_MiB + 512_KiB, 10_MiB, 0, std::nullopt}};
  recording.segments_at_start = {{kStart, 20_MiB, 0, false, false, {}}};
  recording.segment_events = {{Action::alloc, kLater, 20_MiB, 0, 4}, {Action::free, kLater, 20_MiB, 0, 7}};
  recording.segments_at_end = {
      {kStart, 20_MiB, 0, false, false, {{kStart, 9_MiB + 512_KiB, true}, {kStart + 9_MiB + 512_KiB, 10_MiB + 512_KiB, false}}}};
  return recording;
}

TEST_CASE("replay-check: a hand-worked recording that began mid-run replays exact", "[replay-check]") {
  const ReplayCheck check = replay_check(worked_example(), 1024_GiB);
  INFO(check.divergence.value_or("") << check.final_state.value_or(""));
  CHECK(check.exact());
  CHECK(check.policy == "caching");
  CHECK(check.preexisting == 2);
  CHECK(check.segments_at_start == 1);
  CHECK(check.events == 8);
  CHECK(check.simulated_segment_events == 2);
  CHECK(check.recorded_peak_reserved == 40_MiB);
  CHECK(check.simulated_peak_reserved == 40_MiB);
  CHECK(check.ambiguous_sizes.size() == 2);  // P0 and P1: unsplit rest, or a gap of its own
}

TEST_CASE("replay-check: the first divergence says where, what was recorded and what was simulated",
          "[replay-check]") {
  SECTION("a segment event at another trace event") {
    TorchRecording recording = worked_example();
    recording.segment_events[0].during_event = 3;
    const ReplayCheck check = replay_check(recording, 1024_GiB);
    REQUIRE(check.divergence);
    CHECK_THAT(*check.divergence, Catch::StartsWith("segment event 0: expected segment_alloc"));
    CHECK_THAT(*check.divergence, Catch::Contains("(20971520 B) at trace event 3, got segment_alloc"));
    CHECK_THAT(*check.divergence, Catch::EndsWith("at trace event 4"));
    CHECK_FALSE(check.final_state_compared);
    CHECK_FALSE(check.exact());
  }
  SECTION("a segment event PyTorch did not make") {
    TorchRecording recording = worked_example();
    recording.segment_events.pop_back();
    const ReplayCheck check = replay_check(recording, 1024_GiB);
    REQUIRE(check.divergence);
    CHECK_THAT(*check.divergence, Catch::StartsWith("segment event 1: expected none, got segment_free"));
    CHECK(check.recorded_peak_reserved == 40_MiB);
  }
  SECTION("a free of another segment than the one allocated") {
    TorchRecording recording = worked_example();
    recording.segment_events[1].addr = kStart;
    CHECK(replay_check(recording, 1024_GiB).divergence);
  }
  SECTION("a final layout that differs") {
    TorchRecording recording = worked_example();
    recording.segments_at_end[0].blocks[0].size -= 512;
    recording.segments_at_end[0].blocks[1].size += 512;
    const ReplayCheck check = replay_check(recording, 1024_GiB);
    CHECK_FALSE(check.divergence);
    REQUIRE(check.final_state);
    CHECK_THAT(*check.final_state, Catch::Contains("block 0: expected allocated 9960960 B at offset 0, got allocated "
                                                   "9961472 B at offset 0"));
  }
  SECTION("a device too small for the recording") {
    const ReplayCheck check = replay_check(worked_example(), 30_MiB);
    REQUIRE(check.divergence);
    CHECK_THAT(*check.divergence, Catch::Contains("expected segment_alloc at 0x20000000 of 20 MiB (20971520 B) at trace "
                                                  "event 4, got none"));
  }
}

TEST_CASE("replay-check: recordings it cannot rebuild are bad input", "[replay-check]") {
  TorchRecording recording = worked_example();
  SECTION("native segments held when the recording began, in a recording with expandable segments") {
    recording.settings.expandable_segments = true;
    CHECK_THROWS_WITH(replay_check(recording, 1024_GiB),
                      Catch::Contains("a native segment at") && Catch::Contains("held when the recording began"));
  }
  SECTION("a block outside every segment") {
    recording.preexisting[1].addr = kLater;
    CHECK_THROWS_WITH(replay_check(recording, 1024_GiB), Catch::Contains("lies in no recorded segment"));
  }
  SECTION("a block larger than its room") {
    recording.preexisting[1].requested = 11_MiB;
    CHECK_THROWS_AS(replay_check(recording, 1024_GiB), Error);
  }
}

TEST_CASE("replay-check: recorded settings become the caching spec", "[replay-check]") {
  TorchAllocatorSettings settings;
  CHECK(to_string(caching_spec_for(settings)) == "caching");
  settings.roundup_power2_divisions = {{1, 0}, {2, 0}, {4, 0}};
  CHECK(to_string(caching_spec_for(settings)) == "caching");  // all zero: plain rounding
  settings.max_split_size = 128_MiB;
  settings.roundup_power2_divisions = {{1, 4}, {2, 4}, {4, 8}};
  settings.garbage_collection_threshold = 0.6;
  CHECK(to_string(caching_spec_for(settings)) ==
        "caching:max_split_size=134217728,roundup_power2_divisions=[1:4,2:4,4:8],gc_threshold=0.6");
  // The conf's keys, read by the table of PyTorch's keys, give what the fields do not carry;
  // the fields win over the conf, and a backend the recording's spec cannot be is named.
  settings.conf = "max_non_split_rounding_mb:64,per_process_memory_fraction:0.5,backend:cudaMallocAsync,"
                  "max_split_size_mb:256,pinned_use_background_threads:True";
  CHECK(to_string(caching_spec_for(settings)) ==
        "caching:max_non_split_rounding=64MiB,fraction=0.5,max_split_size=134217728,"
        "roundup_power2_divisions=[1:4,2:4,4:8],gc_threshold=0.6");
  const UnmappedSettings unmapped = unmapped_settings(settings);
  CHECK(unmapped.not_modelled == std::vector<std::string>{"backend:cudaMallocAsync"});
  CHECK(unmapped.without_effect == std::vector<std::string>{"pinned_use_background_threads:True"});
}

TEST_CASE("replay-check: both recorded PyTorch snapshots replay exact", "[replay-check][shared]") {
  for (const char* name : {"vae_decode_loop.snapshot.pickle", "lm_medium_ctx128_train.snapshot.pickle"}) {
    const auto path = test::shared_trace(name);
    if (!path) continue;
    INFO(name);
    TorchRecording recording = read_torch_recording(*path);
    const ReplayCheck check = replay_check(recording, 1024_GiB);
    INFO(check.divergence.value_or("") << check.final_state.value_or(""));
    CHECK(check.exact());
    CHECK(check.recorded_peak_reserved == check.simulated_peak_reserved);
    // The check has teeth: other rounding places blocks elsewhere.
    recording.settings.roundup_power2_divisions.clear();
    for (std::uint64_t megabytes = 1; megabytes <= 32768; megabytes *= 2) {
      recording.settings.roundup_power2_divisions.emplace_back(megabytes, 2);
    }
    bool exact = true;
    try {
      exact = replay_check(recording, 1024_GiB).exact();
    } catch (const Error&) {  // or cannot even lay the start out
      exact = false;
    }
    CHECK_FALSE(exact);
  }
}

}  // namespace
}  // namespace allocsim
