// allocsim replay, the what-if from a recording: synthetic snapshots the test writes, and
// the shared vae recording when it is there.
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "cli_driver.hpp"
#include "recording_policies.hpp"
#include "shared_traces.hpp"
#include "studies/replay_check.hpp"
#include "studies/replay_from_recording.hpp"
#include "studies/run_report.hpp"
#include "studies/synthetic_snapshot.hpp"
#include "workloads/torch_recording.hpp"

namespace allocsim {
namespace {

using Catch::Contains;

// A run that ends in an OOM from fragmentation. 40 MiB is allocated (its own 40 MiB
// segment) and freed; a 4 MiB request splits the cached 40 MiB block (36 MiB left);
// 40 MiB again finds no block that large, cudaMalloc(40 MiB) fails with 30 MiB free and
// nothing is wholly free to release: `oom`. The run could hold 40 + 30 = 70 MiB.
// - caching (what PyTorch did): the same OOM; reserved peak 40 MiB, 1 segment.
// - caching:max_split_size=20MiB: the 40 MiB block is oversize, so 4 MiB takes a new
//   20 MiB segment (60 MiB reserved, <= 70) and 40 MiB reuses the cached block whole
//   (40 < 40 + 20, max_non_split_rounding): no OOM; peaks 60 MiB reserved, 44 MiB allocated.
// - expandable: 40 MiB maps two 20 MiB pages; 4 MiB splits them; 40 MiB takes the free
//   36 MiB and maps one page more after it (60 MiB <= 70): no OOM, 2 map calls.
constexpr const char* kFragmentedOom = R"(
M = 1 << 20
X = 0x7f0000000000
trace = [e("segment_alloc", X, 40 * M), e("alloc", X, 40 * M), e("free_requested", X, 40 * M),
         e("free_completed", X, 40 * M), e("alloc", X, 4 * M),
         {"action": "oom", "size": 40 * M, "device_free": FREE * M, "stream": 0}]
snapshot = {"segments": [seg(X, 40 * M, [b(4 * M, "active_allocated", address=X, requested_size=4 * M),
                                         b(36 * M, "inactive", address=X + 4 * M)])],
            "device_traces": [trace]}
)";

std::string replace_all(std::string text, const std::string& from, const std::string& to) {
  for (auto at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
  return text;
}

TEST_CASE("replay: expandable and max_split_size avoid a fragmentation OOM that caching repeats", "[replay][recordings]") {
  const test::TempDir dir;
  const std::string path = test::write_snapshot(dir, "oom.pickle", replace_all(kFragmentedOom, "FREE", "30"));
  const TorchRecording recording = read_torch_recording(path);
  {
    const ReplayCheck check = replay_check(recording, 1024_GiB);
    INFO(check.divergence.value_or("") << check.final_state.value_or(""));
    CHECK(check.exact());  // the recording is what `caching` does
  }
  const std::vector<RecordingPolicy> policies =
      test::recording_policies({"caching", "caching:max_split_size=20MiB", "expandable", "direct"});
  const WhatIf what_if = replay_from_recording(recording, policies, {});
  CHECK(what_if.capacity == 70_MiB);
  CHECK(what_if.recorded.peak_reserved == 40_MiB);
  CHECK(what_if.recorded.peak_allocated == 40_MiB);
  CHECK(what_if.recorded.device_allocs == 1);
  CHECK(what_if.recorded.ooms == 1);
  REQUIRE(what_if.replayed.size() == 4);
  const WhatIfOutcome& caching = what_if.replayed[0];
  CHECK(caching.policy == "caching");
  CHECK(caching.peak_reserved == 40_MiB);
  CHECK(caching.peak_allocated == 40_MiB);
  CHECK(caching.device_allocs == 1);
  CHECK(caching.ooms == 1);
  CHECK(caching.first_oom == "the recorded OOM before trace event 3: 40 MiB");
  const WhatIfOutcome& split = what_if.replayed[1];
  CHECK(split.policy == "caching:max_split_size=20MiB");
  CHECK(split.peak_reserved == 60_MiB);
  CHECK(split.peak_allocated == 44_MiB);
  CHECK(split.device_allocs == 2);
  CHECK(split.ooms == 0);
  const WhatIfOutcome& expandable = what_if.replayed[2];
  CHECK(expandable.start == "live blocks placed");
  CHECK(expandable.peak_reserved == 60_MiB);
  CHECK(expandable.peak_allocated == 44_MiB);
  CHECK(expandable.device_allocs == 2);
  CHECK(expandable.ooms == 0);
  // direct: 40 MiB, freed, 4 MiB, then 40 MiB fits beside it (44 <= 70).
  CHECK(what_if.replayed[3].ooms == 0);
  CHECK(what_if.replayed[3].peak_reserved == 44_MiB);

  SECTION("on the command line, with units and the answer per policy") {
    const std::string csv = dir.file("what_if.csv");
    const test::Outcome shown =
        test::cli({"replay", path, "--policy", "caching,caching:max_split_size=20MiB", "--policy", "expandable",
                   "--csv", csv});
    INFO(shown.err);
    REQUIRE(shown.status == 0);
    CHECK_THAT(shown.out, Contains("device: 70 MiB (73400320 B), what the recorded run could hold"));
    CHECK_THAT(shown.out, Contains("replay-check: exact, `caching` replays what PyTorch did"));
    CHECK_THAT(shown.out, Contains("reserved peak") && Contains("40 MiB (41943040 B)") && Contains("60 MiB (62914560 B)"));
    CHECK_THAT(shown.out, Contains("first OOM, caching: the recorded OOM before trace event 3: 40 MiB\n"));
    const auto avoided = shown.out.find("  avoided the recorded OOM");
    REQUIRE(avoided != std::string::npos);
    std::istringstream words(shown.out.substr(avoided, shown.out.find('\n', avoided) - avoided));
    std::vector<std::string> cells{std::istream_iterator<std::string>(words), {}};
    CHECK(cells == std::vector<std::string>{"avoided", "the", "recorded", "OOM", "-", "no", "yes", "yes"});
    std::ifstream in(csv);
    std::stringstream text;
    text << in.rdbuf();
    CHECK_THAT(text.str(), Catch::StartsWith("recording,side,policy,start,capacity_bytes,peak_reserved_bytes,"
                                             "peak_allocated_bytes,device_mallocs,oom_count,avoided_recorded_oom\n"));
    CHECK_THAT(text.str(), Contains(",simulated,caching:max_split_size=20MiB,recorded segments adopted,73400320,"
                                    "62914560,46137344,2,0,yes\n"));
    CHECK(test::cli({"replay", path, "--policy", "nosuch"}).status == 2);
    CHECK_THAT(test::cli({"replay", path, "--policy", "caching:bogus=1"}).err, Contains("unknown key 'bogus'"));
    CHECK_THAT(test::cli({"replay", "--help"}).out, Contains("allocsim replay FILE.pickle --policy SPECS"));
  }

  // The twin says 50 MiB were free: then cudaMalloc(40 MiB) could not have failed.
  // replay-check reports it at the OOM's event, and the what-if's caching serves it.
  const TorchRecording twin = read_torch_recording(test::write_snapshot(dir, "twin.pickle",
                                                                        replace_all(kFragmentedOom, "FREE", "50")));
  const ReplayCheck check = replay_check(twin, 1024_GiB);
  REQUIRE(check.divergence);
  CHECK_THAT(*check.divergence, Catch::StartsWith("segment event 1: expected none, got segment_alloc at ") &&
                                    Catch::EndsWith("of 40 MiB (41943040 B) at trace event 3"));
  const WhatIf twin_what_if = replay_from_recording(twin, test::recording_policies({"caching"}), {});
  CHECK(twin_what_if.capacity == 90_MiB);
  CHECK(twin_what_if.replayed[0].ooms == 0);
}

TEST_CASE("replay: each replayed side is a run a report draws, its OOM told at its moment", "[replay][report]") {
  const test::TempDir dir;
  const TorchRecording recording =
      read_torch_recording(test::write_snapshot(dir, "oom.pickle", replace_all(kFragmentedOom, "FREE", "30")));
  const std::vector<RecordingPolicy> policies = test::recording_policies({"caching", "expandable"});
  const WhatIf what_if = replay_from_recording(recording, policies, {}, {}, true);
  REQUIRE(what_if.replayed.size() == 2);
  const WhatIfOutcome& caching = what_if.replayed[0];
  const WhatIfOutcome& expandable = what_if.replayed[1];
  REQUIRE(caching.recorders);
  REQUIRE(expandable.recorders);
  REQUIRE(caching.run.tenants.size() == 1);
  const TenantResult& failed = caching.run.tenants.front();
  CHECK(caching.run.device.capacity == 70_MiB);
  CHECK(failed.policy == "caching");
  CHECK(failed.events == 3);
  CHECK(failed.peak_allocated == caching.peak_allocated);
  CHECK(failed.peak_reserved == 40_MiB);
  CHECK(failed.peak_requested == 40_MiB);
  CHECK(failed.live_lower_bound == 40_MiB);
  // The recorded OOM: 40 MiB with 4 MiB live in a 40 MiB segment and 30 MiB free on the
  // device. 36 MiB free in the segment plus 30 MiB would hold it, no free block does.
  REQUIRE(failed.oom_count == 1);
  REQUIRE(failed.ooms.size() == 1);
  CHECK(failed.ooms[0].event == 3);
  CHECK(failed.ooms[0].bytes == 40_MiB);
  CHECK(failed.ooms[0].kind == OomKind::fragmentation);
  CHECK(failed.ooms[0].context.device_available == 30_MiB);
  CHECK(failed.ooms[0].context.own_live_requested == 4_MiB);
  const TenantResult& served = expandable.run.tenants.front();
  CHECK(served.oom_count == 0);
  CHECK(served.peak_allocated == expandable.peak_allocated);
  CHECK(served.peak_reserved == 60_MiB);
  // The report's observers heard the trace's two blocks (not the recorded OOM's request),
  // the segment and the changes over time.
  REQUIRE(caching.recorders->blocks.tenants().size() == 1);
  CHECK(caching.recorders->blocks.tenants()[0].blocks.size() == 2);
  CHECK(caching.recorders->blocks.tenants()[0].segments.size() == 1);
  CHECK(expandable.recorders->blocks.tenants()[0].blocks.size() == 2);
  CHECK(!caching.recorders->timeline.points().empty());
  // Without `record` no observer is kept.
  CHECK(!replay_from_recording(recording, policies, {}).replayed[0].recorders);

  std::vector<ReportedRun> reported;
  for (const WhatIfOutcome& side : what_if.replayed) reported.push_back({side.policy, side.scenario, side.run, *side.recorders});
  const std::string page = run_report_data("t", "c", reported);
  CHECK_THAT(page, Contains("\"label\":\"caching\"") && Contains("\"label\":\"expandable\""));
  CHECK_THAT(page, Contains("\"kind\":\"fragmentation\"") && Contains("does not fit (fragmentation)"));
}

TEST_CASE("replay: without a recorded OOM, no limit; the shared vae recording's caching is the recording",
          "[replay][shared]") {
  const test::TempDir dir;
  const std::string path = test::write_snapshot(dir, "fine.pickle", R"(
X = 0x7f0000000000
snapshot = {"segments": [], "device_traces": [[e("segment_alloc", X, 2 << 20), e("alloc", X, 512)]]})");
  const test::Outcome fine = test::cli({"replay", path});
  CHECK(fine.status == 0);
  CHECK_THAT(fine.out, Contains("no limit") && Contains("no OOM recorded"));

  // run replays it from an empty allocator, and says where the other answer is.
  const test::Outcome run = test::cli({"run", "--workload", path, "--policy", "caching"});
  CHECK(run.status == 0);
  CHECK_THAT(run.out, Contains(path + ": a PyTorch recording, replayed from an empty allocator") &&
                          Contains("allocsim replay " + path + " --policy SPEC starts from the state it began in"));
  CHECK_THAT(test::cli({"run", "--workload", "random:n=10", "--policy", "caching"}).out,
             !Contains("PyTorch recording"));

  const auto vae = test::shared_trace("vae_decode_loop.snapshot.pickle");
  if (!vae) return;
  const WhatIf what_if =
      replay_from_recording(read_torch_recording(*vae), test::recording_policies({"caching", "expandable"}), {});
  REQUIRE(what_if.replayed.size() == 2);
  CHECK(what_if.replayed[0].peak_reserved == what_if.recorded.peak_reserved);
  CHECK(what_if.replayed[0].device_allocs == what_if.recorded.device_allocs);
  CHECK(what_if.replayed[0].ooms == 0);
  CHECK(what_if.replayed[1].ooms == 0);
  // PyTorch's allocated peak counts three blocks' unsplit rests (1,835,008 B) the trace's
  // rounded sizes (108,275,712 B) leave out; worked out from the pickle by splitting blocks
  // as PyTorch does, apart from this code.
  CHECK(what_if.recorded.peak_allocated == 110'110'720);
  CHECK(what_if.replayed[0].peak_allocated == what_if.recorded.peak_allocated);
}

TEST_CASE("replay: PyTorch's allocator by its alias `torch` starts from the recorded segments, as `caching` does",
          "[replay][recordings]") {
  const test::TempDir dir;
  const std::string path = test::write_snapshot(dir, "oom.pickle", replace_all(kFragmentedOom, "FREE", "30"));
  const WhatIf what_if =
      replay_from_recording(read_torch_recording(path), test::recording_policies({"caching", "torch"}), {});
  REQUIRE(what_if.replayed.size() == 2);
  const WhatIfOutcome& torch = what_if.replayed[1];
  CHECK(torch.start == "recorded segments adopted");
  CHECK(torch.start == what_if.replayed[0].start);
  CHECK(torch.peak_reserved == what_if.replayed[0].peak_reserved);
  CHECK(torch.ooms == what_if.replayed[0].ooms);
}

// kFragmentedOom with a second segment at the start, 20 MiB and wholly free: cached, as
// PyTorch keeps a segment until empty_cache or an OOM.
constexpr const char* kWithFreeSegment = R"(
M = 1 << 20
X = 0x7f0000000000
Y = 0x7f0010000000
trace = [e("alloc", Y, 8 * M), e("free_requested", Y, 8 * M), e("free_completed", Y, 8 * M)]
snapshot = {"segments": [seg(X, 40 * M, [b(4 * M, "active_allocated", address=X, requested_size=4 * M),
                                         b(36 * M, "inactive", address=X + 4 * M)]),
                         seg(Y, 20 * M, [b(20 * M, "inactive", address=Y)])],
            "device_traces": [trace]}
)";

TEST_CASE("replay on a smaller card: every policy runs to a verdict from the recorded start", "[replay][recordings]") {
  const test::TempDir dir;
  const std::vector<RecordingPolicy> policies = test::recording_policies({"caching", "expandable"});
  {
    // 50 MiB: the 40 MiB segment with its live block fits, the cached free 20 MiB one does
    // not; PyTorch's OOM path gives it back, and the run goes on.
    const TorchRecording recording = read_torch_recording(test::write_snapshot(dir, "free.pickle", kWithFreeSegment));
    const WhatIf what_if = replay_from_recording(recording, policies, 50_MiB);
    REQUIRE(what_if.replayed.size() == 2);
    CHECK(what_if.failed.empty());
    const WhatIfOutcome& caching = what_if.replayed[0];
    CHECK(caching.start == "recorded segments adopted; 1 cached free of them (20 MiB) released for room, as PyTorch's "
                           "OOM path does");
    CHECK(caching.ooms == 0);
    CHECK(caching.peak_reserved == 40_MiB);
    CHECK(what_if.replayed[1].ooms == 0);
  }
  const std::string path = test::write_snapshot(dir, "start.pickle", kWithFreeSegment);
  const TorchRecording recording = read_torch_recording(path);
  {
    // 2 MiB: the 4 MiB live at the start fit no allocator; the verdict says so, with figures.
    const WhatIf what_if = replay_from_recording(recording, policies, 2_MiB);
    REQUIRE(what_if.replayed.size() == 2);
    for (const WhatIfOutcome& outcome : what_if.replayed) {
      INFO(outcome.policy);
      CHECK_THAT(outcome.first_oom.value_or(""),
                 Contains("the 1 blocks live when the recording began (4 MiB) alone exceed the 2 MiB capacity"));
    }
  }
  {
    // 20 MiB: the live 4 MiB would fit, but caching starts from the recorded 40 MiB segment,
    // which does not; expandable places the live block in its own pages.
    const WhatIf what_if = replay_from_recording(recording, policies, 20_MiB);
    REQUIRE(what_if.replayed.size() == 2);
    CHECK_THAT(what_if.replayed[0].first_oom.value_or(""),
               Contains("at the start: 1 of the 1 blocks live when the recording began (4 MiB) found no room on 20 MiB"));
    CHECK(what_if.replayed[1].start == "live blocks placed");
    CHECK_FALSE(what_if.replayed[1].first_oom);
  }
  // The terminal table names each policy's run verdict and counts its OOMs at the request.
  const test::Outcome shown = test::cli({"replay", path, "--policy", "caching,expandable", "--capacity", "20MiB"});
  CHECK(shown.status == 0);
  CHECK_THAT(shown.out, Contains("\n  run verdict   ") && Contains("\n  OOMs at the request   ") && Contains(" (1) ") &&
                            Contains("fits") && Contains("none"));
}

// A recording made without max_split_size whose start holds a 200 MiB segment with 20 MiB
// live at 100 MiB (free 100 MiB before it, 80 MiB after), then asks 150 MiB (a segment of
// its own). On 256 MiB under max_split_size=64MiB, 150 MiB finds no cached block and the
// device 56 MiB: the OOM path gives back oversize cached blocks, and both are parts of a
// segment, not segments: nothing goes back, and the request is an OOM (a verdict, not a
// failure of the replay).
constexpr const char* kSplitStart = R"py(
M = 1 << 20
X = 0x7f0000000000
Y = 0x7f0040000000
trace = [e("segment_alloc", Y, 150 * M), e("alloc", Y, 150 * M), e("free_requested", Y, 150 * M),
         e("free_completed", Y, 150 * M)]
snapshot = {"segments": [seg(X, 200 * M, [b(100 * M, "inactive", address=X),
                                          b(20 * M, "active_allocated", address=X + 100 * M, requested_size=20 * M),
                                          b(80 * M, "inactive", address=X + 120 * M)]),
                         seg(Y, 150 * M, [b(150 * M, "inactive", address=Y)])],
            "device_traces": [trace]}
)py";

TEST_CASE("replay under max_split_size from a start cut without it: an OOM, never a failed replay", "[replay][recordings]") {
  const test::TempDir dir;
  const std::string path = test::write_snapshot(dir, "split.pickle", kSplitStart);
  const std::vector<RecordingPolicy> policies = test::recording_policies({"caching", "caching:max_split_size=64MiB"});
  const WhatIf what_if = replay_from_recording(read_torch_recording(path), policies, 256_MiB);
  for (const WhatIf::Failed& failed : what_if.failed) FAIL_CHECK(failed.policy << ": " << failed.error);
  REQUIRE(what_if.replayed.size() == 2);
  for (const WhatIfOutcome& outcome : what_if.replayed) {
    INFO(outcome.policy);
    CHECK(outcome.start == "recorded segments adopted");
    CHECK(outcome.ooms == 1);
    CHECK(outcome.peak_reserved == 200_MiB);
  }
  const test::Outcome shown = test::cli({"replay", path, "--policy", "caching,caching:max_split_size=64MiB", "--capacity",
                                         "256MiB"});
  INFO(shown.err);
  CHECK(shown.status == 0);
  CHECK_THAT(shown.out, !Contains("could not replay"));
}

// The settings the replay offers a recording (the page's list, web/page/page.js: each a
// PYTORCH_CUDA_ALLOC_CONF a user can set), on cards smaller than the recording held: every
// one replays from the recorded start to a verdict, none fails, none holds more than the card.
TEST_CASE("replay on a smaller card: each shared recording under each setting at 0.3x to 0.9x of its reserved peak",
          "[replay][shared]") {
  const std::vector<RecordingPolicy> settings =
      test::recording_policies({"caching", "expandable", "caching:max_split_size=64MiB", "caching:max_split_size=256MiB",
                                "caching:gc_threshold=0.8,fraction=0.95"});
  for (const char* name : {"lm_medium_ctx128_train.snapshot.pickle", "vae_decode_loop.snapshot.pickle"}) {
    const auto path = test::shared_trace(name);
    if (!path) continue;
    const TorchRecording recording = read_torch_recording(*path);
    const Bytes peak = replay_from_recording(recording, test::recording_policies({"caching"}), {}).recorded.peak_reserved;
    for (const double factor : {0.3, 0.5, 0.75, 0.9}) {
      const auto capacity = static_cast<Bytes>(factor * static_cast<double>(peak));
      INFO(name << " at " << factor << "x: " << format_bytes(capacity));
      const WhatIf what_if = replay_from_recording(recording, settings, capacity);
      for (const WhatIf::Failed& failed : what_if.failed) FAIL_CHECK(failed.policy << ": " << failed.error);
      REQUIRE(what_if.replayed.size() == settings.size());
      for (const WhatIfOutcome& outcome : what_if.replayed) {
        INFO(outcome.policy);
        CHECK(outcome.peak_reserved <= capacity);
        CHECK(outcome.ooms == outcome.run.tenants.front().oom_count);
        CHECK(outcome.first_oom.has_value() == (outcome.ooms > 0));
      }
    }
  }
}

}  // namespace
}  // namespace allocsim
