// replay-check on the kinds of recording users have (issue 13's rules), each a synthetic
// snapshot the test writes that replays exact, and a mutated twin that must report the
// first divergence at the right trace event.
#include <optional>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "cli_driver.hpp"
#include "recording_policies.hpp"
#include "sim/error.hpp"
#include "studies/replay_check.hpp"
#include "studies/replay_from_recording.hpp"
#include "studies/synthetic_snapshot.hpp"
#include "workloads/catalogue.hpp"
#include "workloads/torch_recording.hpp"

namespace allocsim {
namespace {

using Catch::Contains;

std::string replace_all(std::string text, const std::string& from, const std::string& to) {
  for (auto at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
  return text;
}

ReplayCheck checked(const std::string& path, std::optional<int> device = {}) {
  return replay_check(read_torch_recording(path, device), 1024_GiB);
}

// A mutated twin's first divergence; it must have one.
std::string divergence_of(const ReplayCheck& twin) {
  REQUIRE(twin.divergence);
  return *twin.divergence;
}

// Rule 2: PyTorch 2.0 (blocks with only size, state and history; no time_us anywhere) and
// 2.1 (block addresses and requested sizes, pool ids; still no time_us). One small-pool
// segment: 1000 B and 512 B, the first freed, then 700 B reuses its 1 KiB block (the best
// fit, below the segment's free rest).
constexpr const char* kTorch20 = R"(
S = 0x7f0000000000
trace = [e("segment_alloc", S, 2 << 20), e("alloc", S, 1000), e("alloc", S + 1024, 512),
         e("free_requested", S, 1000), e("free_completed", S, 1000), e("alloc", LAST, 700)]
def h(addr, real_size): return [dict(addr=addr, real_size=real_size, frames=[])]
snapshot = {"segments": [seg(S, 2 << 20, [b(1024, "active_allocated", history=h(S, 700)),
                                          b(512, "active_allocated", history=h(S + 1024, 512)),
                                          b((2 << 20) - 1536, "inactive", history=[])])],
            "device_traces": [trace]}
)";
constexpr const char* kTorch21 = R"(
S = 0x7f0000000000
trace = [e("segment_alloc", S, 2 << 20), e("alloc", S, 1000), e("alloc", S + 1024, 512),
         e("free_requested", S, 1000), e("free_completed", S, 1000), e("alloc", LAST, 700)]
snapshot = {"segments": [seg(S, 2 << 20, [b(1024, "active_allocated", address=S, requested_size=700, frames=[]),
                                          b(512, "active_allocated", address=S + 1024, requested_size=512, frames=[]),
                                          b((2 << 20) - 1536, "inactive", address=S + 1536, requested_size=0,
                                            frames=[])],
                         segment_pool_id=(0, 0), is_expandable=False, requested_size=1212, frames=[])],
            "device_traces": [trace]}
)";

TEST_CASE("replay-check rule 2: PyTorch 2.0 and 2.1 snapshots replay exact; a moved block diverges there",
          "[replay-check][recordings]") {
  const test::TempDir dir;
  for (const auto& [name, python] : {std::pair{"2.0", kTorch20}, std::pair{"2.1", kTorch21}}) {
    INFO("PyTorch " << name);
    const std::string path = test::write_snapshot(dir, std::string(name) + ".pickle",
                                                  replace_all(python, "LAST", "S"));
    const TorchRecording recording = read_torch_recording(path);
    CHECK_THAT(recording.format, Contains(std::string("PyTorch ") + name));
    CHECK_FALSE(recording.settings.recorded);  // PyTorch's defaults, and the output says so
    REQUIRE(recording.segments_at_end.size() == 1);
    CHECK(recording.segments_at_end[0].blocks[1].addr == 0x7f0000000400);  // computed for 2.0
    const ReplayCheck check = replay_check(recording, 1024_GiB);
    INFO(check.divergence.value_or("") << check.final_state.value_or(""));
    CHECK(check.exact());
    CHECK(check.policy == "caching");

    const std::string twin = test::write_snapshot(dir, std::string(name) + "-twin.pickle",
                                                  replace_all(python, "LAST", "S + 1536"));
    const ReplayCheck moved = checked(twin);
    REQUIRE(moved.divergence);
    CHECK(*moved.divergence ==
          "trace event 3: alloc of 700 B at 0x7f0000000000, PyTorch placed it at 0x7f0000000600");
  }
}

TEST_CASE("replay-check rule 2: a snapshot older than 2.0 is refused naming the version", "[replay-check][recordings]") {
  const test::TempDir dir;
  const std::string path = test::write_snapshot(
      dir, "old.pickle", "snapshot = [seg(0x7f0000000000, 2 << 20, [b(2 << 20, 'inactive')])]");
  CHECK_THROWS_WITH(read_torch_recording(path), Contains(path) && Contains("PyTorch 1.13 or older") &&
                                                    Contains("records no trace"));
}

// Rule 3: one trace list per visible device (device 1 idle); each replays on its own.
constexpr const char* kTwoDevices = R"(
def trace(S, second):
    return [e("segment_alloc", S, 2 << 20), e("alloc", S, 512), e("alloc", second, 512),
            e("free_requested", S, 512), e("free_completed", S, 512)]
def segment(S, device, second):
    return seg(S, 2 << 20, [b(second - S, "inactive", address=S),
                            b(512, "active_allocated", address=second, requested_size=512),
                            b(S + (2 << 20) - second - 512, "inactive", address=second + 512)], device=device)
A, B = 0x7f0000000000, 0x7f2000000000
snapshot = {"segments": [segment(A, 0, A + 512), segment(B, 2, SECOND)],
            "device_traces": [trace(A, A + 512), [], trace(B, SECOND)]}
)";

TEST_CASE("replay-check rule 3: several devices, one chosen with --cuda-device", "[replay-check][recordings]") {
  const test::TempDir dir;
  const std::string path = test::write_snapshot(dir, "two.pickle", replace_all(kTwoDevices, "SECOND", "B + 512"));
  CHECK_THROWS_WITH(read_torch_recording(path),
                    Contains("2 devices have traces: 0 (5 entries), 2 (5 entries); choose one with --cuda-device N"));
  for (const int device : {0, 2}) {
    INFO("device " << device);
    const TorchRecording recording = read_torch_recording(path, device);
    CHECK(recording.device == device);
    CHECK(recording.segments_at_end.size() == 1);  // the other device's segment is not this one's
    const ReplayCheck check = replay_check(recording, 1024_GiB);
    INFO(check.divergence.value_or("") << check.final_state.value_or(""));
    CHECK(check.exact());
  }
  CHECK_THROWS_WITH(read_torch_recording(path, 1), Contains("device trace 1 is empty"));

  // The twin: device 2's second block recorded elsewhere; device 0 is untouched.
  const std::string twin = test::write_snapshot(dir, "twin.pickle", replace_all(kTwoDevices, "SECOND", "B + 1024"));
  CHECK(checked(twin, 0).exact());
  const ReplayCheck moved = checked(twin, 2);
  REQUIRE(moved.divergence);
  CHECK_THAT(*moved.divergence, Catch::StartsWith("trace event 1: alloc of 512 B") &&
                                    Contains("PyTorch placed it at 0x7f2000000400"));

  SECTION("on the command line") {
    CHECK(test::cli({"replay-check", path}).status == 2);
    const test::Outcome replayed = test::cli({"replay-check", path, "--cuda-device", "2"});
    CHECK(replayed.status == 0);
    CHECK_THAT(replayed.out, Contains("recording: device 2") && Contains("\nexact\n"));
    const test::Outcome run = test::cli({"run", "--workload", path, "--policy", "caching", "--cuda-device", "2"});
    INFO(run.err);
    CHECK(run.status == 0);
    const test::Outcome ambiguous = test::cli({"run", "--workload", path, "--policy", "caching"});
    CHECK(ambiguous.status == 2);
    CHECK_THAT(ambiguous.err, Contains("choose one with --cuda-device N"));
    CHECK(load_workload(path, LoadOptions{0}).events.size() == 3);
    CHECK_THROWS_WITH(load_workload("random:n=10", LoadOptions{0}), Contains("--cuda-device is for PyTorch snapshots"));
  }
}

// Rule 4: stream 0x200 appears first, 0x100 second; empty_cache() releases in the order
// of the free-block set, (raw stream, size, address): 0x100's segment first.
constexpr const char* kTwoStreams = R"(
A, B = 0x7f0000000000, 0x7f0000400000
trace = [e("segment_alloc", A, 2 << 20, 0x200), e("alloc", A, 512, 0x200),
         e("segment_alloc", B, 2 << 20, 0x100), e("alloc", B, 512, 0x100),
         e("free_requested", A, 512, 0x200), e("free_completed", A, 512, 0x200),
         e("free_requested", B, 512, 0x100), e("free_completed", B, 512, 0x100),
         RELEASES]
snapshot = {"segments": [], "device_traces": [trace]}
)";

TEST_CASE("replay-check rule 4: streams numbered by raw value, as PyTorch orders releases", "[replay-check][recordings]") {
  const test::TempDir dir;
  const std::string b_then_a = R"(e("segment_free", B, 2 << 20, 0x100), e("segment_free", A, 2 << 20, 0x200))";
  const std::string path = test::write_snapshot(dir, "streams.pickle", replace_all(kTwoStreams, "RELEASES", b_then_a));
  const TorchRecording recording = read_torch_recording(path);
  CHECK(recording.trace.events[0].stream == 1);  // 0x200, though it came first
  CHECK(recording.trace.events[1].stream == 0);
  const ReplayCheck check = replay_check(recording, 1024_GiB);
  INFO(check.divergence.value_or("") << check.final_state.value_or(""));
  CHECK(check.exact());
  CHECK(check.simulated_segment_events == 4);

  const std::string a_then_b = R"(e("segment_free", A, 2 << 20, 0x200), e("segment_free", B, 2 << 20, 0x100))";
  const ReplayCheck twin = checked(test::write_snapshot(dir, "twin.pickle", replace_all(kTwoStreams, "RELEASES", a_then_b)));
  CHECK(divergence_of(twin) ==
        "segment event 2: expected segment_free at 0x7f0000000000 of 2 MiB (2097152 B) at trace event 4, got "
        "segment_free at 0x7f0000400000 of 2 MiB (2097152 B) at trace event 4");
}

// Rule 1: cudaMalloc put the second segment L *below* the first, H. After one 1 MiB block
// of each is freed, a 1 MiB request ties between them and takes the lower address: L's.
constexpr const char* kBelow = R"(
M = 1 << 20
H, L = 0x7f0000400000, 0x7f0000000000
trace = [e("segment_alloc", H, 2 * M), e("alloc", H, M), e("alloc", H + M, M),
         e("segment_alloc", L, 2 * M), e("alloc", L, M), e("alloc", L + M, M),
         e("free_requested", H, M), e("free_completed", H, M),
         e("free_requested", L, M), e("free_completed", L, M), e("alloc", LAST, M)]
def blocks(S, first):
    return [b(M, "active_allocated" if first else "inactive", address=S, requested_size=M if first else 0),
            b(M, "active_allocated", address=S + M, requested_size=M)]
snapshot = {"segments": [seg(H, 2 * M, blocks(H, LAST == H)), seg(L, 2 * M, blocks(L, LAST == L))],
            "device_traces": [trace]}
)";

TEST_CASE("replay-check rule 1: segments at the recorded addresses; every block's address compared",
          "[replay-check][recordings]") {
  const test::TempDir dir;
  const ReplayCheck check = checked(test::write_snapshot(dir, "below.pickle", replace_all(kBelow, "LAST", "L")));
  INFO(check.divergence.value_or("") << check.final_state.value_or(""));
  CHECK(check.exact());
  CHECK(check.simulated_segment_events == 2);

  // The twin says PyTorch took H's block: the address check catches it at that event,
  // not in the final layout.
  const ReplayCheck twin = checked(test::write_snapshot(dir, "twin.pickle", replace_all(kBelow, "LAST", "H")));
  CHECK(divergence_of(twin) ==
        "trace event 6: alloc of 1 MiB (1048576 B) at 0x7f0000000000, PyTorch placed it at 0x7f0000400000");
  CHECK_FALSE(twin.final_state_compared);
}

// Rule 7: private pools (CUDA graphs, MemPool) are refused, naming the pool and the entry.
TEST_CASE("replay-check rule 7: a private pool is refused by name", "[replay-check][recordings]") {
  const test::TempDir dir;
  const std::string common = R"(
S = 0x7f0000000000
trace = [e("segment_alloc", S, 2 << 20), e("alloc", S, 512, **EXTRA)]
snapshot = {"segments": [seg(S, 2 << 20, [b(512, "active_allocated", address=S, requested_size=512),
                                          b((2 << 20) - 512, "inactive", address=S + 512)], segment_pool_id=POOL)],
            "device_traces": [trace]}
)";
  const std::string in_segment = replace_all(replace_all(common, "POOL", "(1, 0)"), "**EXTRA", "");
  CHECK_THROWS_WITH(checked(test::write_snapshot(dir, "pool.pickle", in_segment)),
                    Contains("private pool (1, 0) at segments[0]") && Contains("CUDA graph"));
  const std::string in_entry = replace_all(replace_all(common, "POOL", "(0, 0)"), "**EXTRA", "pool_id=(2, 1)");
  CHECK_THROWS_WITH(checked(test::write_snapshot(dir, "entry.pickle", in_entry)),
                    Contains("private pool (2, 1) at device_traces[0][1]"));
  CHECK(checked(test::write_snapshot(dir, "default.pickle",
                                     replace_all(replace_all(common, "POOL", "(0, 0)"), "**EXTRA", "")))
            .exact());
}

// Rule 8: max_non_split_rounding_mb:40 lets a 30 MiB request (over max_split_size) take a
// cached 60 MiB block (60 < 30 + 40); with the default 20 it would need a new segment.
constexpr const char* kRounding = R"(
M = 1 << 20
X = 0x7f0000000000
trace = [e("segment_alloc", X, 60 * M), e("alloc", X, 60 * M), e("free_requested", X, 60 * M),
         e("free_completed", X, 60 * M), e("alloc", X, 30 * M)]
settings = {"PYTORCH_CUDA_ALLOC_CONF": "@CONF@", "max_split_size": 20 * M, "garbage_collection_threshold": 0.0,
            "expandable_segments": False, "release_lock_on_cudamalloc": True, "pinned_num_register_threads": 8,
            "pinned_use_cuda_host_register": False, "roundup_power2_divisions": {str(1 << i): 0 for i in range(16)}}
snapshot = {"segments": [seg(X, 60 * M, [b(60 * M, "active_allocated", address=X, requested_size=30 * M)])],
            "device_traces": [trace], "allocator_settings": settings}
)";

TEST_CASE("replay-check rule 8: every recorded PYTORCH_CUDA_ALLOC_CONF key is mapped or named",
          "[replay-check][recordings]") {
  const test::TempDir dir;
  const std::string conf =
      "max_split_size_mb:20,max_non_split_rounding_mb:40,roundup_power2_divisions:[256:1,>:1],"
      "release_lock_on_cudamalloc:True,pinned_num_register_threads:8,future_key:1";
  const std::string path = test::write_snapshot(dir, "conf.pickle", replace_all(kRounding, "@CONF@", conf));
  const ReplayCheck check = checked(path);
  INFO(check.divergence.value_or("") << check.final_state.value_or(""));
  CHECK(check.exact());
  CHECK(check.policy == "caching:max_non_split_rounding=40MiB,max_split_size=20971520");
  CHECK(check.settings_not_modelled == std::vector<std::string>{"future_key:1"});
  CHECK(check.settings_without_effect ==
        std::vector<std::string>{"release_lock_on_cudamalloc:True", "pinned_num_register_threads:8"});
  const test::Outcome shown = test::cli({"replay-check", path});
  CHECK_THAT(shown.out, Contains("settings not modelled (replayed without them): future_key:1"));

  // The twin ran with the default rounding: PyTorch would have made a segment there.
  CHECK_THAT(divergence_of(checked(test::write_snapshot(dir, "twin.pickle", replace_all(kRounding, "@CONF@", "max_split_size_mb:20")))), Catch::StartsWith("segment event 1: expected none, got segment_alloc at ") &&
                                   Catch::EndsWith("of 30 MiB (31457280 B) at trace event 2"));
}

// Rule 8, partial releases: max_split_size 20 MiB; A1 (40 MiB), A2 (30 MiB) and a small
// segment S are cached whole. 64 MiB fits none; cudaMalloc fails; PyTorch frees oversize
// blocks from the largest down until 64 MiB is covered (A1, then A2: 70 MiB) and retries,
// leaving S cached. empty_cache() would have freed S too (72 MiB in all), so the release
// row the converter made is replayed as that failed malloc, and is exact.
constexpr const char* kPartial = R"(
M = 1 << 20
A1, A2, S, C = 0x7f0000000000, 0x7f0004000000, 0x7f0008000000, 0x7f000c000000
trace = [e("segment_alloc", A1, 40 * M), e("alloc", A1, 40 * M), e("segment_alloc", A2, 30 * M), e("alloc", A2, 30 * M),
         e("segment_alloc", S, 2 * M), e("alloc", S, 512),
         e("free_requested", A1, 40 * M), e("free_completed", A1, 40 * M),
         e("free_requested", A2, 30 * M), e("free_completed", A2, 30 * M),
         e("free_requested", S, 512), e("free_completed", S, 512),
         RELEASED, e("segment_alloc", C, 64 * M), e("alloc", C, 64 * M)]
settings = {"PYTORCH_CUDA_ALLOC_CONF": "max_split_size_mb:20", "max_split_size": 20 * M,
            "garbage_collection_threshold": 0.0, "expandable_segments": False, "roundup_power2_divisions": {}}
end = [seg(C, 64 * M, [b(64 * M, "active_allocated", address=C, requested_size=64 * M)])]
if SMALL_KEPT:
    end.insert(0, seg(S, 2 * M, [b(2 * M, "inactive", address=S)]))
snapshot = {"segments": end, "device_traces": [trace], "allocator_settings": settings}
)";

TEST_CASE("replay-check rule 8: a partial release inside a failed cudaMalloc replays as recorded",
          "[replay-check][recordings]") {
  const test::TempDir dir;
  const auto write = [&](const std::string& name, const std::string& released, bool small_kept) {
    return test::write_snapshot(dir, name, replace_all(replace_all(kPartial, "RELEASED", released), "SMALL_KEPT",
                                                       small_kept ? "True" : "False"));
  };
  const std::string partial = R"(e("segment_free", A1, 40 * M), e("segment_free", A2, 30 * M))";
  const ReplayCheck check = checked(write("partial.pickle", partial, true));
  INFO(check.divergence.value_or("") << check.final_state.value_or(""));
  CHECK(check.exact());
  CHECK(check.partial_releases == 1);
  CHECK(check.simulated_segment_events == 6);
  // The what-if leaves that release to each policy: on a device without limit, caching's
  // cudaMalloc(64 MiB) does not fail, so it frees nothing (72 + 64 MiB reserved).
  const WhatIf what_if = replay_from_recording(read_torch_recording(write("partial.pickle", partial, true)),
                                               test::recording_policies({"caching"}), {});
  CHECK(what_if.releases_in_allocs == 1);
  CHECK_FALSE(what_if.replay_check_divergence);
  CHECK(what_if.recorded.peak_reserved == 72_MiB);
  CHECK(what_if.replayed[0].peak_reserved == 136_MiB);

  // empty_cache() before the alloc, all three freed in the pools' order (large by size,
  // then small): a release as before, exact too.
  const ReplayCheck full = checked(write(
      "full.pickle", R"(e("segment_free", A2, 30 * M), e("segment_free", A1, 40 * M), e("segment_free", S, 2 * M))",
      false));
  INFO(full.divergence.value_or("") << full.final_state.value_or(""));
  CHECK(full.exact());
  CHECK(full.partial_releases == 0);

  // The twin freed A2 alone: PyTorch would have freed the largest, A1, first.
  const ReplayCheck twin = checked(write("twin.pickle", R"(e("segment_free", A2, 30 * M))", true));
  CHECK(divergence_of(twin) ==
        "segment event 3: expected segment_free at 0x7f0004000000 of 30 MiB (31457280 B) at trace event 6, got "
        "segment_free at 0x7f0000000000 of 40 MiB (41943040 B) at trace event 6");
}

// Rule 8, garbage collection: garbage_collection_threshold 0.5 under a memory fraction the
// snapshot does not record. A1 (40 MiB) and A2 (30 MiB) are cached; the 64 MiB alloc's
// collection freed A1 alone, then it made a segment. The segment PyTorch freed is freed.
constexpr const char* kCollected = R"(
M = 1 << 20
A1, A2, C = 0x7f0000000000, 0x7f0004000000, 0x7f000c000000
trace = [e("segment_alloc", A1, 40 * M), e("alloc", A1, 40 * M), e("segment_alloc", A2, 30 * M), e("alloc", A2, 30 * M),
         FREE_A1 e("free_requested", A2, 30 * M), e("free_completed", A2, 30 * M),
         e("segment_free", A1, 40 * M), e("segment_alloc", C, 64 * M), e("alloc", C, 64 * M)]
settings = {"PYTORCH_CUDA_ALLOC_CONF": "garbage_collection_threshold:0.5", "max_split_size": -1,
            "garbage_collection_threshold": 0.5, "expandable_segments": False, "roundup_power2_divisions": {}}
end = [seg(A2, 30 * M, [b(30 * M, "inactive", address=A2)]),
       seg(C, 64 * M, [b(64 * M, "active_allocated", address=C, requested_size=64 * M)])]
snapshot = {"segments": END, "device_traces": [trace], "allocator_settings": settings}
)";

TEST_CASE("replay-check rule 8: garbage collection's frees replay as recorded", "[replay-check][recordings]") {
  const test::TempDir dir;
  const std::string freed = R"(e("free_requested", A1, 40 * M), e("free_completed", A1, 40 * M),)";
  const std::string python = replace_all(replace_all(kCollected, "FREE_A1", freed), "END", "end");
  const ReplayCheck check = checked(test::write_snapshot(dir, "gc.pickle", python));
  INFO(check.divergence.value_or("") << check.final_state.value_or(""));
  CHECK(check.exact());
  CHECK(check.gc_releases == 1);
  CHECK(check.policy == "caching:gc_threshold=0.5");

  // The twin never freed A1, yet PyTorch's trace says it was collected: only A2 is wholly
  // free, so the release (trace event 3) cannot be a collection's, and replays as
  // empty_cache(), freeing A2.
  const std::string twin_python =
      replace_all(replace_all(kCollected, "FREE_A1", ""), "END",
                  R"([seg(A1, 40 * M, [b(40 * M, "active_allocated", address=A1, requested_size=40 * M)])] + end)");
  const ReplayCheck twin = checked(test::write_snapshot(dir, "twin.pickle", twin_python));
  CHECK(divergence_of(twin) ==
        "segment event 2: expected segment_free at 0x7f0000000000 of 40 MiB (41943040 B) at trace event 3, got "
        "segment_free at 0x7f0004000000 of 30 MiB (31457280 B) at trace event 3");
}

// Rule 5: a recording that ends in an OOM. The 12 MiB block is freed and cached; 40 MiB
// fits nowhere, cudaMalloc fails (30 MiB free), PyTorch releases the cached segment,
// retries, fails again and records `oom`. The replay fails the same request the same way.
constexpr const char* kOom = R"(
M = 1 << 20
X = 0x7f0000000000
trace = [e("segment_alloc", X, 12 * M), e("alloc", X, 12 * M), e("free_requested", X, 12 * M),
         e("free_completed", X, 12 * M), e("segment_free", X, 12 * M),
         {"action": "oom", "size": 40 * M, "device_free": FREE * M, "stream": 0}]
snapshot = {"segments": [], "device_traces": [trace]}
)";

TEST_CASE("replay-check rule 5: a recording that ends in an OOM replays exact", "[replay-check][recordings]") {
  const test::TempDir dir;
  const std::string path = test::write_snapshot(dir, "oom.pickle", replace_all(kOom, "FREE", "30"));
  const ReplayCheck check = checked(path);
  INFO(check.divergence.value_or("") << check.final_state.value_or(""));
  CHECK(check.exact());
  CHECK(check.recorded_ooms == 1);
  CHECK(check.replayed_ooms == 1);
  CHECK(check.simulated_segment_events == 2);  // the alloc, and the release inside the failed malloc
  CHECK_THAT(test::cli({"replay-check", path}).out, Contains("OOMs: 1 recorded, 1 failed in the replay too"));

  // The twin had room for it: the replay serves it from a new segment instead of releasing.
  const ReplayCheck twin = checked(test::write_snapshot(dir, "twin.pickle", replace_all(kOom, "FREE", "50")));
  CHECK_THAT(divergence_of(twin), Catch::StartsWith("segment event 1: expected segment_free at 0x7f0000000000 of 12 MiB "
                                                 "(12582912 B) at trace event 2, got segment_alloc at ") &&
                                   Catch::EndsWith("of 40 MiB (41943040 B) at trace event 2"));
  CHECK(twin.replayed_ooms == 0);
}

// Rule 9: a truncated ring. P (9 MiB + 100 B) was allocated before the recording and is
// freed in it; the next block, Q, starts 9.5 MiB in. P rounds to 9 MiB + 512 B, and the
// 511.5 KiB before Q is either P's unsplit rest or a free gap of its own: both rules fit.
// Either way the freed room is 9.5 MiB, and a 9.5 MiB request takes it whole.
constexpr const char* kRing = R"(
M, K = 1 << 20, 1 << 10
S = 0x7f0000000000
P, Q = S, S + 9 * M + 512 * K
trace = [e("free_requested", P, 9 * M + 100), e("free_completed", P, 9 * M + 100), e("alloc", P, LAST)]
snapshot = {"segments": [seg(S, 20 * M, [b(9 * M + 512 * K, "active_allocated", address=P, requested_size=9 * M + 512 * K),
                                         b(10 * M + 512 * K, "active_allocated", address=Q, requested_size=10 * M)])],
            "device_traces": [trace]}
)";

TEST_CASE("replay-check rule 9: a block that two sizing rules fit is said to be ambiguous", "[replay-check][recordings]") {
  const test::TempDir dir;
  const std::string path = test::write_snapshot(dir, "ring.pickle", replace_all(kRing, "LAST", "9 * M + 512 * K"));
  const ReplayCheck check = checked(path);
  INFO(check.divergence.value_or("") << check.final_state.value_or(""));
  CHECK(check.exact());
  CHECK(check.preexisting == 2);
  REQUIRE(check.ambiguous_sizes.size() == 1);  // Q's size is in the snapshot
  CHECK(check.ambiguous_sizes[0] ==
        "the block at 0x7f0000000000 is 9961472 B (the rest of 1 MiB or less left unsplit) or 9437696 B (rounded, "
        "with a free gap after it); replayed as the first");
  CHECK_THAT(test::cli({"replay-check", path}).out,
             Contains("ambiguous sizes: 1 blocks from before the recording fit two sizing rules; the first: the block "
                      "at 0x7f0000000000"));

  // The twin asks for one byte more than the room: a new segment at trace event 3.
  CHECK_THAT(divergence_of(checked(test::write_snapshot(dir, "twin.pickle", replace_all(kRing, "LAST", "9 * M + 512 * K + 1")))), Catch::StartsWith("segment event 0: expected none, got segment_alloc at ") &&
                                   Catch::EndsWith("of 20 MiB (20971520 B) at trace event 3"));
}

// Rule 6: expandable segments. The large pool's range starts at B, 2 MiB-aligned but not
// on 20 MiB (PyTorch leaves cuMemAddressReserve's alignment to the driver). 12 MiB maps
// page 0 (20 MiB) and splits it; 6 MiB takes 6 of the 8 MiB left (2 MiB free at B+18M);
// 10 MiB takes those 2 MiB and maps page 1 after them (B+20M); freed, it merges with the
// 12 MiB free after it, and empty_cache() unmaps the one whole page inside: page 1.
constexpr const char* kExpandable = R"(
M = 1 << 20
B = 0x7f0000200000
trace = [e("segment_map", B, 20 * M), e("alloc", B, 12 * M), e("alloc", B + 12 * M, 6 * M),
         e("segment_map", B + 20 * M, 20 * M), e("alloc", B + 18 * M, 10 * M),
         e("free_requested", B + 18 * M, 10 * M), e("free_completed", B + 18 * M, 10 * M),
         e("segment_unmap", UNMAP, 20 * M)]
blocks = [b(12 * M, "active_allocated", address=B, requested_size=12 * M),
          b(6 * M, "active_allocated", address=B + 12 * M, requested_size=6 * M),
          b(2 * M, "inactive", address=B + 18 * M)]
snapshot = {"segments": [seg(B, 20 * M, blocks, is_expandable=True)], "device_traces": [trace]}
SETTINGS
)";

TEST_CASE("replay-check rule 6: expandable segments replay through `expandable`, map and unmap compared",
          "[replay-check][recordings]") {
  const test::TempDir dir;
  const std::string recorded = R"(snapshot["allocator_settings"] = {"expandable_segments": True})";
  for (const std::string& settings : {recorded, std::string()}) {
    INFO("settings: " << (settings.empty() ? "none (is_expandable and the maps tell)" : settings));
    const std::string python = replace_all(kExpandable, "SETTINGS", settings);
    const std::string path = test::write_snapshot(dir, "expandable.pickle", replace_all(python, "UNMAP", "B + 20 * M"));
    const TorchRecording recording = read_torch_recording(path);
    CHECK(recording.segments_at_start.empty());  // the maps undone: nothing mapped at the start
    const ReplayCheck check = replay_check(recording, 1024_GiB);
    INFO(check.divergence.value_or("") << check.final_state.value_or(""));
    CHECK(check.exact());
    CHECK(check.policy == "expandable");
    CHECK(check.simulated_segment_events == 3);
    CHECK(check.addresses_compared == 3);
    CHECK(check.recorded_peak_reserved == 40_MiB);
    CHECK(check.simulated_peak_reserved == 40_MiB);
    // The what-if from it: `expandable` is the recording; native `caching` holds 12 + 20 MiB.
    const WhatIf what_if = replay_from_recording(recording, test::recording_policies({"expandable", "caching"}), {});
    CHECK(what_if.recorded.policy == "expandable");
    CHECK(what_if.replayed[0].peak_reserved == 40_MiB);
    CHECK(what_if.replayed[0].device_allocs == what_if.recorded.device_allocs);
    CHECK(what_if.replayed[1].peak_reserved == 32_MiB);

    // The twin unmapped page 0: the replay unmapped page 1, at the release (trace event 4).
    const std::string twin = test::write_snapshot(dir, "twin.pickle", replace_all(python, "UNMAP", "B"));
    const ReplayCheck moved = checked(twin);
    REQUIRE(moved.divergence);
    CHECK(*moved.divergence ==
          "segment event 2: expected segment_unmap at 0x7f0000200000 of 20 MiB (20971520 B) at trace event 4, got "
          "segment_unmap at 0x7f0001600000 of 20 MiB (20971520 B) at trace event 4");
  }
}

// Rule 6, a ring buffer begun mid-run: page 0 of the range at B (20 MiB) was mapped before
// the recording, holding P (8 MiB, live) and a cached free gap of 12 MiB after it. X (6 MiB)
// takes the gap's start; Y (10 MiB) takes the 6 MiB left and maps page 1 after them; freed,
// it merges with the free rest of page 1, and empty_cache() unmaps page 1.
constexpr const char* kExpandableStart = R"(
M = 1 << 20
B = 0x7f0000200000
trace = [e("alloc", B + 8 * M, 6 * M), e("segment_map", B + 20 * M, MAPPED), e("alloc", B + 14 * M, 10 * M),
         e("free_requested", B + 14 * M, 10 * M), e("free_completed", B + 14 * M, 10 * M),
         e("segment_unmap", B + 20 * M, 20 * M)]
blocks = [b(8 * M, "active_allocated", address=B, requested_size=8 * M),
          b(6 * M, "active_allocated", address=B + 8 * M, requested_size=6 * M),
          b(6 * M, "inactive", address=B + 14 * M)]
snapshot = {"segments": [seg(B, 20 * M, blocks, is_expandable=True)], "device_traces": [trace],
            "allocator_settings": {"expandable_segments": True}}
)";

TEST_CASE("replay-check rule 6: expandable segments mapped before the recording are rebuilt as mapped ranges",
          "[replay-check][recordings]") {
  const test::TempDir dir;
  const std::string path = test::write_snapshot(dir, "start.pickle", replace_all(kExpandableStart, "MAPPED", "20 * M"));
  const TorchRecording recording = read_torch_recording(path);
  REQUIRE(recording.segments_at_start.size() == 1);  // page 0, the maps and unmaps undone
  CHECK(recording.segments_at_start[0].size == 20_MiB);
  CHECK(recording.segments_at_start[0].expandable);
  const ReplayCheck check = replay_check(recording, 1024_GiB);
  INFO(check.divergence.value_or("") << check.final_state.value_or(""));
  CHECK(check.exact());
  CHECK(check.policy == "expandable");
  CHECK(check.preexisting == 1);
  CHECK(check.segments_at_start == 1);
  CHECK(check.simulated_segment_events == 2);
  CHECK(check.addresses_compared == 2);  // X and Y; P was placed by the start
  CHECK(check.recorded_peak_reserved == 40_MiB);
  CHECK(check.simulated_peak_reserved == 40_MiB);
  CHECK_THAT(test::cli({"replay-check", path}).out, Contains("exact"));
  // The what-if adopts the range too: `expandable` is the recording; native `caching` places P.
  const WhatIf what_if = replay_from_recording(recording, test::recording_policies({"expandable", "caching"}), {});
  CHECK_FALSE(what_if.replay_check_divergence);
  CHECK(what_if.replayed[0].start == "recorded segments adopted");
  CHECK(what_if.replayed[0].peak_reserved == 40_MiB);
  CHECK(what_if.replayed[0].device_allocs == what_if.recorded.device_allocs);
  CHECK(what_if.replayed[1].start == "live blocks placed");

  // The twin's Y mapped two pages (40 MiB); the replay maps one, at trace event 2.
  const ReplayCheck twin = checked(test::write_snapshot(dir, "twin.pickle", replace_all(kExpandableStart, "MAPPED", "40 * M")));
  CHECK(divergence_of(twin) ==
        "segment event 0: expected segment_map at 0x7f0001600000 of 40 MiB (41943040 B) at trace event 2, got "
        "segment_map at 0x7f0001600000 of 20 MiB (20971520 B) at trace event 2");

  // Two mapped pieces of one range (its middle unmapped before the recording): refused by name.
  const std::string pieces = test::write_snapshot(dir, "pieces.pickle", R"(
M = 1 << 20
B = 0x7f0000200000
snapshot = {"segments": [seg(B, 20 * M, [b(20 * M, "active_allocated", address=B, requested_size=20 * M)],
                             is_expandable=True),
                         seg(B + 40 * M, 20 * M, [b(20 * M, "active_allocated", address=B + 40 * M,
                                                    requested_size=20 * M)], is_expandable=True)],
            "device_traces": [[e("alloc", B + 60 * M, 512)]]})");
  CHECK_THROWS_WITH(checked(pieces), Contains("are mapped pieces of one range"));
}

// Converter errors name the file and the entry, whole.
TEST_CASE("replay-check: converter errors name the file and the entry, whole", "[replay-check][recordings]") {
  const test::TempDir dir;
  const std::string nul = test::write_snapshot(dir, "nul.pickle", R"(
snapshot = {"segments": [], "device_traces": [[e("segment_alloc", 0x7f0000000000, 2 << 20),
                                               e("alloc", 0x7f0000000000, "ab\x00cd"), e("alloc", 1, 2)]]})");
  CHECK_THROWS_WITH(read_torch_recording(nul),
                    Contains(nul) && Contains(R"(device_traces[0][1] (alloc): 'size' is 'ab\x00cd', not a number)"));
  const std::string persistent = test::write_snapshot(dir, "persistent.pickle", R"(
class Pickler(pickle.Pickler):
    def persistent_id(self, obj):
        return "storage\x000" if obj == "STORAGE" else None
snapshot = {"segments": [], "device_traces": [["STORAGE"]]})");
  CHECK_THROWS_WITH(read_torch_recording(persistent),
                    Contains(persistent) && Contains(R"(refused persistent id 'storage\x000': a memory snapshot is plain data)"));
}

}  // namespace
}  // namespace allocsim
