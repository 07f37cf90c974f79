// --memory-viz and --chrome-trace on the command line: written whole, refused where they
// cannot say what was asked.
#include <cstdlib>
#include <filesystem>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "cli_driver.hpp"

namespace allocsim::test {
namespace {

bool viewer_check(const std::string& path) {
  const std::filesystem::path tool =
      std::filesystem::path(ALLOCSIM_README).parent_path() / "tools" / "check_memory_viz.py";
  return std::system(("python3 '" + tool.string() + "' '" + path + "' > /dev/null").c_str()) == 0;
}

TEST_CASE("run --memory-viz and --chrome-trace write a snapshot and a trace of the run", "[cli][export]") {
  TempDir dir;
  const std::string pickle = dir.file("run.pickle");
  const std::string json = dir.file("run.json");
  const Outcome outcome = cli({"run", "--workload", "resnet50_b2_nows_steps1", "--policy", "caching", "--memory-viz",
                               pickle, "--chrome-trace", json});
  INFO(outcome.err);
  REQUIRE(outcome.status == 0);
  CHECK(viewer_check(pickle));
  const nlohmann::json trace = nlohmann::json::parse(read_file(json));
  CHECK(trace.at("traceEvents").size() > 100);
  const Outcome check = cli({"replay-check", pickle});
  CHECK(check.status == 0);
  CHECK_THAT(check.out, Catch::Contains("exact"));
}

TEST_CASE("replay of a CSV trace exports its one policy's replay", "[cli][export]") {
  TempDir dir;
  const std::string csv = dir.file("trace.csv", "time_ns,op,id,bytes,stream,tag\n0,alloc,1,1000,0,other\n"
                                                "1,alloc,2,3000000,0,other\n2,free,1,,,\n3,free,2,,,\n");
  const std::string pickle = dir.file("replay.pickle");
  const Outcome outcome = cli({"replay", csv, "--policy", "direct", "--memory-viz", pickle});
  INFO(outcome.err);
  REQUIRE(outcome.status == 0);
  CHECK(viewer_check(pickle));
  const Outcome two = cli({"replay", csv, "--policy", "direct,bfc", "--memory-viz", dir.file("two.pickle")});
  CHECK(two.status == 2);
  CHECK(one_line(two.err));
  CHECK_THAT(two.err, Catch::Contains("one --policy"));
  CHECK_FALSE(std::filesystem::exists(dir.file("two.pickle")));
}

TEST_CASE("replay of a PyTorch recording exports its one policy's replay from the recorded start", "[cli][export]") {
  TempDir dir;
  // The recording: a run's own export.
  const std::string recording = dir.file("recording.pickle");
  REQUIRE(cli({"run", "--workload", "resnet50_b2_nows_steps1", "--policy", "caching", "--memory-viz", recording}).status == 0);
  const std::string pickle = dir.file("replay.pickle");
  const std::string json = dir.file("replay.json");
  const Outcome outcome = cli({"replay", recording, "--policy", "bfc", "--memory-viz", pickle, "--chrome-trace", json});
  INFO(outcome.err);
  REQUIRE(outcome.status == 0);
  CHECK(viewer_check(pickle));
  CHECK(nlohmann::json::parse(read_file(json)).at("traceEvents").size() > 2);
  const Outcome two = cli({"replay", recording, "--policy", "caching,expandable", "--memory-viz", dir.file("two.pickle")});
  CHECK(two.status == 2);
  CHECK_THAT(two.err, Catch::Contains("one --policy"));
}

TEST_CASE("an export over another output is refused before anything runs", "[cli][export]") {
  TempDir dir;
  const std::string same = dir.file("out.json");
  const Outcome outcome = cli({"run", "--workload", "resnet50_b2_nows_steps1", "--policy", "caching", "--json", same,
                               "--chrome-trace", same});
  CHECK(outcome.status == 2);
  CHECK(one_line(outcome.err));
  CHECK_FALSE(std::filesystem::exists(same));
}

}  // namespace
}  // namespace allocsim::test
