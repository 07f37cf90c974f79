// Nothing lost, nothing overwritten: every command that writes files refuses, before it
// runs, an output that is one of its inputs (however spelled) or another of its outputs,
// and leaves the input byte for byte as it was.
#include <filesystem>
#include <fstream>

#include <catch2/catch.hpp>

#include "cli_driver.hpp"

namespace allocsim {
namespace {

namespace fs = std::filesystem;
using namespace test;

constexpr const char* kTrace =
    "time_ns,op,id,bytes,stream,tag\n0,alloc,a,1048576,0,activation\n10,alloc,b,2097152,0,weight\n20,free,a,,,\n";

// `args` must fail with exit 2 and one line naming `message`; the files in `untouched` keep their bytes.
void refused(const std::vector<std::string>& args, const std::string& message, const std::vector<std::string>& untouched) {
  std::vector<std::string> before;
  for (const std::string& file : untouched) before.push_back(read_file(file));
  const Outcome outcome = cli(args);
  INFO(outcome.err);
  CHECK(outcome.status == 2);
  CHECK(one_line(outcome.err));
  CHECK_THAT(outcome.err, Catch::Contains(message));
  for (std::size_t i = 0; i < untouched.size(); ++i) CHECK(read_file(untouched[i]) == before[i]);
}

TEST_CASE("output guard: --csv equal to the input trace is refused and the trace is left byte-identical", "[cli][output_guard]") {
  const TempDir dir;
  const std::string trace = dir.file("trace.csv", kTrace);
  fs::create_symlink(trace, dir.path / "link.csv");
  const std::vector<std::string> run{"--workload", trace, "--policy", "bestfit"};
  const auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = run;
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  };
  refused(with({"--csv", trace}), "--csv " + trace + " is the file --workload " + trace + " reads", {trace});
  refused(with({"--json", (dir.path / "link.csv").string()}), "refusing to write over an input", {trace});
  refused(with({"--timeline", (dir.path / "sub" / ".." / "trace.csv").string()}), "over an input", {trace});
  refused(with({"--save-trace", trace}), "--save-trace", {trace});
  // The same through the working folder: ./trace.csv is trace.csv.
  const fs::path before = fs::current_path();
  fs::current_path(dir.path);
  refused({"--workload", "trace.csv", "--policy", "bestfit", "--csv", "./trace.csv"}, "over an input", {trace});
  fs::current_path(before);
  // A co-tenant's trace counts as well, and two outputs may not be one file.
  refused({"--workload", "random:n=10", "--policy", "direct", "--tenant", trace + "@bestfit", "--csv", trace},
          "over an input", {trace});
  const std::string out = dir.file("out.csv", "what an earlier run wrote\n");
  refused(with({"--csv", out, "--json", (dir.path / "." / "out.csv").string()}), "are the same file", {trace, out});
  CHECK(dir.entries() == 3);  // trace.csv, link.csv and out.csv: no output, no temporary
  // An honest run writes both.
  REQUIRE(cli(with({"--csv", dir.file("run.csv"), "--json", dir.file("run.json")})).status == 0);
  CHECK(read_file(trace) == kTrace);
}

TEST_CASE("output guard: sweep, maxbatch and replay refuse the same, before they run", "[cli][output_guard]") {
  const TempDir dir;
  const std::string trace = dir.file("trace.csv", kTrace);
  refused({"sweep", "--workload", trace, "--policy", "bestfit,direct", "--csv", trace, "--quiet"}, "over an input", {trace});
  refused({"sweep", "--workload", "random:n=10", "--policy", "direct", "--tenant", trace + "@direct", "--csv", trace,
           "--quiet"},
          "over an input", {trace});
  // An output folder that takes no file fails now, not after the searches.
  refused({"maxbatch", "--workload", "seed_cnn", "--policy", "direct", "--csv", "/proc/allocsim-maxbatch.csv"},
          "takes no new file", {});
  const std::string snapshot = dir.file("run.pickle");
  fs::copy_file(std::string(ALLOCSIM_TEST_DATA) + "/tiny.snapshot.pickle", snapshot);
  refused({"replay", snapshot, "--policy", "caching", "--csv", snapshot}, "over an input", {snapshot});
  CHECK(dir.entries() == 2);
}

}  // namespace
}  // namespace allocsim
