// `allocsim trace info | convert | slice` driven as a user would: what they print, what
// they write, and that bad input is one line, exit 2, with every file left as it was.
#include <filesystem>
#include <string>

#include <catch2/catch.hpp>

#include "cli_driver.hpp"
#include "workloads/catalogue.hpp"

namespace allocsim {
namespace {

using namespace test;
using Catch::Contains;

const std::string kData = std::string(ALLOCSIM_TEST_DATA) + "/";

void refused(const std::vector<std::string>& args, const std::string& message, const std::string& untouched = "") {
  const std::string before = untouched.empty() ? "" : read_file(untouched);
  const Outcome outcome = cli(args);
  INFO(outcome.err);
  CHECK(outcome.status == 2);
  CHECK(one_line(outcome.err));
  CHECK_THAT(outcome.err, Contains(message));
  if (!untouched.empty()) CHECK(read_file(untouched) == before);
}

TEST_CASE("trace info: format, counts, span, bound, streams and tags", "[cli][trace]") {
  const Outcome outcome = cli({"trace", "info", kData + "rmm_v21.04.csv"});
  INFO(outcome.err);
  REQUIRE(outcome.status == 0);
  CHECK_THAT(outcome.out, Contains("format: rmm-log"));
  CHECK_THAT(outcome.out, Contains("events: 5 (3 allocations, 2 frees, 0 releases, 0 syncs)"));
  CHECK_THAT(outcome.out, Contains("live lower bound: 3 KiB (3072 B, first at event 1)"));
  // Two threads on the per-thread default stream are two streams; 0x0 is the default.
  CHECK_THAT(outcome.out, Contains("streams: 0 (1 allocations, 512 B), 1 (1 allocations, 1 KiB), 2 (1 allocations, 2 KiB)"));
  CHECK_THAT(outcome.out, Contains("tags: other (3 allocations"));
  const Outcome tf = cli({"trace", "info", kData + "tf_memory.log"});
  CHECK_THAT(tf.out, Contains("format: tf-memory-log"));
  CHECK_THAT(tf.out, Contains("steps: 2; layers: 4"));
  const Outcome model = cli({"trace", "info", "resnet50_b8_steps1"});
  CHECK(model.status == 0);
  CHECK_THAT(model.out, Contains("tags: weight ("));
}

// The CSVs beside the pickles were written by `allocsim trace convert` at 603e3da, when a
// snapshot still became CSV text and a JSON sidecar before its trace was read; reading it
// straight into its trace must write them byte for byte. mid_run.snapshot.pickle holds
// blocks from before the recording, an empty_cache(), a failed malloc, two streams and
// categories (the dict of snapshot_conversion_test's tiny(), with frames and categories).
TEST_CASE("trace convert: a snapshot's CSV is what it was when the snapshot went through text", "[cli][trace][snapshot]") {
  const TempDir dir;
  for (const std::string name : {"tiny", "mid_run"}) {
    const std::string out = dir.file(name + ".csv");
    const Outcome converted = cli({"trace", "convert", kData + name + ".snapshot.pickle", out});
    INFO(converted.err);
    REQUIRE(converted.status == 0);
    CHECK(read_file(out) == read_file(kData + name + ".snapshot.csv"));
  }
}

TEST_CASE("trace convert: every reader's input to CSV, and the CSV back to itself", "[cli][trace]") {
  const TempDir dir;
  const std::string first = dir.file("tf.csv");
  const Outcome converted = cli({"trace", "convert", kData + "tf_memory.log", first});
  INFO(converted.err);
  REQUIRE(converted.status == 0);
  CHECK_THAT(converted.out, Contains("wrote " + first + " (csv): 7 events, 4 allocations, from"));
  const Trace direct = load_workload(kData + "tf_memory.log");
  const Trace through_csv = load_workload(first);
  REQUIRE(through_csv.events.size() == direct.events.size());
  for (std::size_t i = 0; i < direct.events.size(); ++i) {
    CHECK(through_csv.events[i].time == direct.events[i].time);
    CHECK(through_csv.events[i].op == direct.events[i].op);
  }
  CHECK(through_csv.live_lower_bound == direct.live_lower_bound);
  const std::string second = dir.file("again.csv");
  REQUIRE(cli({"trace", "convert", first, second}).status == 0);
  CHECK(read_file(second) == read_file(first));
  // The device of a profiler trace with two GPUs.
  const std::string kineto = dir.file("kineto.csv");
  REQUIRE(cli({"trace", "convert", kData + "kineto_two_gpus.pt.trace.json", kineto, "--cuda-device", "0"}).status == 0);
  CHECK(load_workload(kineto).events.size() == 6);
}

TEST_CASE("a profiler trace of two GPUs replays and runs with --cuda-device", "[cli][trace]") {
  const std::string kineto = kData + "kineto_two_gpus.pt.trace.json";
  const Outcome replay = cli({"replay", kineto, "--cuda-device", "1", "--policy", "caching"});
  INFO(replay.err);
  CHECK(replay.status == 0);
  CHECK_THAT(replay.out, Contains("(kineto)"));
  CHECK_THAT(cli({"replay", kineto}).err, Contains("choose one with --cuda-device N"));
  const Outcome run = cli({"--workload", kineto, "--cuda-device", "0", "--policy", "caching"});
  INFO(run.err);
  CHECK(run.status == 0);
  const Outcome tf = cli({"--workload", kData + "tf_memory.log", "--policy", "growth"});
  INFO(tf.err);
  CHECK(tf.status == 0);
  CHECK_THAT(tf.out, Contains("fits"));
}

TEST_CASE("trace slice: the range as a trace, what it carried and dropped said", "[cli][trace]") {
  const TempDir dir;
  const std::string out = dir.file("part.csv");
  const Outcome outcome = cli({"trace", "slice", kData + "tf_memory.log", out, "--events", "2:5"});
  INFO(outcome.err);
  REQUIRE(outcome.status == 0);
  CHECK_THAT(outcome.out, Contains("events 2 to 4 of 7"));
  CHECK_THAT(outcome.out, Contains("2 blocks alive at the cut allocated at its start; 0 frees after the end dropped"));
  CHECK(load_workload(out).events.size() == 5);
  REQUIRE(cli({"trace", "slice", kData + "tf_memory.log", out, "--time", "1s:"}).status == 0);
  CHECK(load_workload(out).events.size() == 3);  // the first tensor, still alive, then id 4's alloc and free
}

TEST_CASE("trace: bad input is one line, exit 2, and nothing is written over", "[cli][trace]") {
  const TempDir dir;
  const std::string kept = dir.file("kept.csv", "time_ns,op,id,bytes\n0,alloc,a,1\n");
  const std::string bad = dir.file("bad.log", "no memory lines here\n");
  refused({"trace", "convert", bad, kept}, "no __LOG_MEMORY__ lines", kept);
  refused({"trace", "convert", kept, kept}, "OUT", kept);
  refused({"trace", "convert", kept, dir.file("out.parquet")}, "no trace writer for this extension (writers: .csv, .atrace)");
  refused({"trace", "slice", kept, dir.file("s.csv")}, "needs one of --events A:B or --time A:B");
  refused({"trace", "slice", kept, dir.file("s.csv"), "--events", "5"}, "--events '5' is not A:B");
  refused({"trace", "slice", kept, kept, "--events", "0:1"}, "OUT", kept);
  refused({"trace", "slice", kData + "rmm_v21.04.csv", kept, "--events", "9:"}, "holds no event", kept);
  refused({"trace", "info"}, "info needs one trace");
  refused({"trace", "frobnicate"}, "unknown trace subcommand 'frobnicate'");
  refused({"trace"}, "trace needs a subcommand");
  CHECK(dir.entries() == 2);  // no temporary left behind
}

TEST_CASE("docs/formats.md's table and sections document every reader and writer", "[cli][trace]") {
  const std::string formats = read_file(ALLOCSIM_DOCS "/formats.md");
  for (const ReaderInfo& reader : all_readers()) {
    CAPTURE(reader.name);
    CHECK_THAT(formats, Contains("| `" + std::string(reader.name) + "` |"));
    CHECK_THAT(formats, Contains("## `" + std::string(reader.name) + "`"));
  }
  for (const WriterInfo& writer : all_writers()) {
    CAPTURE(writer.name);
    CHECK_THAT(formats, Contains("| `" + std::string(writer.extension) + "` | `" + std::string(writer.name) + "` |"));
  }
}

TEST_CASE("trace --help teaches each subcommand", "[cli][trace]") {
  const Outcome help = cli({"trace", "--help"});
  CHECK(help.status == 0);
  CHECK_THAT(help.out, Contains("blocks alive at the cut become allocations at its start"));
  CHECK_THAT(help.out, Contains("frees after the end are dropped"));
  CHECK_THAT(help.out, Contains(".csv  csv:"));
  const Outcome slice = cli({"trace", "slice", "--help"});
  CHECK(slice.status == 0);
  CHECK_THAT(slice.out, Contains("--events A:B"));
  const Outcome convert = cli({"trace", "convert", "--help"});
  CHECK(convert.status == 0);
  CHECK_THAT(convert.out, Contains(".atrace is the fast format"));
  CHECK_THAT(convert.out, Contains("allocsim trace convert big.csv big.atrace"));
  CHECK_THAT(cli({"--help"}).out, Contains("allocsim trace info|convert|slice"));
}

}  // namespace
}  // namespace allocsim
