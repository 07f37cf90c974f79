// --report on run, replay, sweep and maxbatch, and `allocsim compare`, driven as a user would.
#include <cstdlib>

#include <catch2/catch.hpp>

#include "cli_driver.hpp"

namespace allocsim::test {
namespace {

const std::string kFragmentation = std::string(ALLOCSIM_TEST_DATA) + "/../../workloads/traces/seed_fragmentation.csv";

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST_CASE("run --report writes one self-contained page naming every tenant and policy", "[cli][report]") {
  TempDir dir;
  const std::string page = dir.file("run.html");
  const Outcome outcome = cli({"run", "--capacity", "1GiB", "--tenant", "random:n=200,live=64MiB@bestfit", "--tenant",
                               "random:n=100,seed=2,live=32MiB@direct", "--report", page});
  REQUIRE(outcome.status == 0);
  const std::string html = read_file(page);
  CHECK(has(html, "\"kind\":\"run\""));
  CHECK(has(html, "tenant 0: bestfit"));
  CHECK(has(html, "tenant 1: direct"));
  CHECK(has(html, "random:n=200,live=64MiB"));
  CHECK(!has(html, "d3.min.js"));  // inlined, not linked
  CHECK(has(html, "d3={version:"));  // the library itself is in the page
  CHECK(!has(html, "<script src"));
  CHECK(has(html, "default-src 'none'"));
  CHECK(dir.entries() == 1);  // no temporary left behind
}

TEST_CASE("the same run makes the same page, byte for byte", "[cli][report]") {
  TempDir dir;
  const std::string path = dir.file("run.html");
  const auto page = [&] {
    REQUIRE(cli({"run", "--workload", "random:n=300", "--policy", "caching", "--report", path}).status == 0);
    return read_file(path);
  };
  const std::string first = page();
  CHECK(!first.empty());
  CHECK(first == page());
}

TEST_CASE("the report is an output: never over an input or another output", "[cli][report]") {
  TempDir dir;
  const std::string csv = dir.file("out.csv");
  const Outcome same = cli({"run", "--workload", "random:n=10", "--policy", "bestfit", "--csv", csv, "--report", csv});
  CHECK(same.status == 2);
  CHECK(has(same.err, "--report"));
  CHECK(one_line(same.err));
}

TEST_CASE("compare: one column per policy, each verdict line begins with its policy", "[cli][report]") {
  TempDir dir;
  const std::string page = dir.file("compare.html");
  const Outcome outcome = cli({"compare", "--workload", kFragmentation, "--policy", "bfc,direct", "--capacity", "10GiB",
                               "--report", page});
  REQUIRE(outcome.status == 0);
  CHECK(has(outcome.out, "bfc: tenant 0 does not fit (fragmentation)"));
  CHECK(has(outcome.out, "direct: tenant 0 fits"));
  const std::vector<std::string> table = lines(outcome.out);
  bool header = false;
  for (const std::string& line : table) header = header || (has(line, "bfc") && has(line, "direct") && line.front() == ' ');
  CHECK(header);
  const std::string html = read_file(page);
  CHECK(has(html, "\"label\":\"bfc\""));
  CHECK(has(html, "\"label\":\"direct\""));
  CHECK(has(html, "\"kind\":\"fragmentation\""));
}

TEST_CASE("compare without policies, or with a bad one, is refused in one line", "[cli][report]") {
  const Outcome none = cli({"compare", "--workload", "random:n=10"});
  CHECK(none.status == 2);
  CHECK(has(none.err, "--policy"));
  const Outcome bad = cli({"compare", "--workload", "random:n=10", "--policy", "bfc,nosuch"});
  CHECK(bad.status == 2);
  CHECK(has(bad.err, "nosuch"));
  CHECK(one_line(bad.err));
}

TEST_CASE("sweep and maxbatch --report write the batch page", "[cli][report]") {
  TempDir dir;
  const std::string sweep = dir.file("sweep.html");
  REQUIRE(cli({"sweep", "--workload", "resnet18", "--batch", "1:4", "--precision", "fp32,amp", "--policy", "bfc,direct",
               "--capacity", "16GiB", "--quiet", "--csv", dir.file("sweep.csv"), "--report", sweep}).status == 0);
  const std::string page = read_file(sweep);
  CHECK(has(page, "\"kind\":\"batch\""));
  CHECK(has(page, "\"x_axis\":\"batch\""));
  CHECK(has(page, "\"name\":\"precision=fp32\""));
  CHECK(has(page, "\"name\":\"precision=amp\""));
  const std::string maxbatch = dir.file("maxbatch.html");
  REQUIRE(cli({"maxbatch", "--workload", "resnet18", "--policy", "direct", "--capacity", "2GiB", "--limit", "64",
               "--report", maxbatch}).status == 0);
  CHECK(has(read_file(maxbatch), "\"policy\":\"direct\""));
}

TEST_CASE("replay --report draws a log's replays and a recording's what-if, one run per policy", "[cli][report]") {
  TempDir dir;
  const std::string page = dir.file("replay.html");
  REQUIRE(cli({"replay", std::string(ALLOCSIM_TEST_DATA) + "/rmm_v23.10.dev0.csv", "--policy", "rmm-pool,rmm-arena",
               "--report", page}).status == 0);
  const std::string html = read_file(page);
  CHECK(has(html, "\"label\":\"rmm-pool\""));
  CHECK(has(html, "\"label\":\"rmm-arena\""));
  // docs/recordings.md's recording: a fragmentation OOM that caching repeats and expandable avoids.
  const std::string pickle = dir.file("fragmented_oom.pickle");
  const std::string script = std::string(ALLOCSIM_TEST_DATA) + "/../../tools/examples/fragmented_oom_snapshot.py";
  REQUIRE(std::system(("python3 '" + script + "' '" + pickle + "'").c_str()) == 0);
  const std::string what_if = dir.file("what_if.html");
  const Outcome recording = cli({"replay", pickle, "--policy", "caching,expandable", "--report", what_if});
  INFO(recording.err);
  REQUIRE(recording.status == 0);
  const std::string drawn = read_file(what_if);
  CHECK(has(drawn, "\"kind\":\"run\""));
  CHECK(has(drawn, "\"label\":\"caching\""));
  CHECK(has(drawn, "\"label\":\"expandable\""));
  CHECK(has(drawn, "\"series\":[["));  // bytes over time drawn
  CHECK(has(drawn, "\"blocks\":[["));  // the memory map has blocks
  CHECK(has(drawn, "\"kind\":\"fragmentation\""));  // caching's OOM, told at its moment
  CHECK(has(drawn, "allocsim replay: fragmented_oom.pickle"));
  CHECK(!has(drawn, "<script src"));
  CHECK(dir.entries() == 3);  // the log's page, the recording, its page: no temporary left
}

}  // namespace
}  // namespace allocsim::test
