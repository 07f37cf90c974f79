// OutputPaths: an output that is an input or another output is refused, by file identity
// (./x, dir/../x, symlinks, hard links), and every output's folder is probed for a new file.
#include <filesystem>
#include <fstream>

#include <catch2/catch.hpp>

#include "cli_driver.hpp"
#include "sim/error.hpp"
#include "sim/output_paths.hpp"

namespace allocsim {
namespace {

namespace fs = std::filesystem;
using test::TempDir;

TEST_CASE("output paths: one file however it is spelled", "[output_paths]") {
  const TempDir dir;
  const std::string trace = dir.file("trace.csv", "time_ns,op,id,bytes\n");
  const fs::path folder = dir.path;
  CHECK(same_file(trace, trace));
  CHECK(same_file(trace, (folder / "." / "trace.csv").string()));
  fs::create_directory(folder / "sub");
  CHECK(same_file(trace, (folder / "sub" / ".." / "trace.csv").string()));
  fs::create_symlink(trace, folder / "link.csv");
  CHECK(same_file(trace, (folder / "link.csv").string()));
  fs::create_hard_link(trace, folder / "hard.csv");
  CHECK(same_file(trace, (folder / "hard.csv").string()));
  // Relative to the working folder.
  const fs::path before = fs::current_path();
  fs::current_path(folder);
  CHECK(same_file("./trace.csv", trace));
  CHECK(same_file("new.csv", (folder / "new.csv").string()));  // neither exists: the same path
  CHECK_FALSE(same_file("trace.csv", "new.csv"));
  fs::current_path(before);
  CHECK_FALSE(same_file(trace, dir.file("other.csv", "x")));
  CHECK_FALSE(same_file(trace, (folder / "missing.csv").string()));
}

TEST_CASE("output paths: an output over an input or another output is refused before anything is written", "[output_paths]") {
  const TempDir dir;
  const std::string trace = dir.file("trace.csv", "time_ns,op,id,bytes\n");
  fs::create_symlink(trace, dir.path / "link.csv");
  {
    OutputPaths paths;
    paths.input("--workload", trace);
    paths.output("--csv", (dir.path / "link.csv").string());
    CHECK_THROWS_WITH(paths.check(), Catch::Contains("--csv " + (dir.path / "link.csv").string()) &&
                                         Catch::Contains("--workload " + trace) && Catch::Contains("input"));
  }
  {
    OutputPaths paths;
    paths.input("--workload", trace);
    paths.output("--csv", dir.file("out.csv"));
    paths.output("--json", (dir.path / "." / "out.csv").string());
    CHECK_THROWS_WITH(paths.check(), Catch::Contains("--json") && Catch::Contains("--csv") && Catch::Contains("the same file"));
  }
  {
    OutputPaths paths;  // distinct files, empty ones ignored: fine, and the probe leaves nothing behind
    paths.input("--workload", trace);
    paths.input("--device-profile", "");
    paths.output("--csv", dir.file("a.csv"));
    paths.output("--json", dir.file("a.json"));
    paths.output("--timeline", "");
    CHECK_NOTHROW(paths.check());
  }
  CHECK(test::read_file(trace) == "time_ns,op,id,bytes\n");
  CHECK(dir.entries() == 2);  // trace.csv and link.csv
}

TEST_CASE("output paths: every output's folder must take a new file", "[output_paths]") {
  const TempDir dir;
  const auto refused = [](const std::string& path) {
    OutputPaths paths;
    paths.output("--csv", path);
    try {
      paths.check();
    } catch (const Error& error) {
      return std::string(error.what());
    }
    return std::string();
  };
  CHECK_THAT(refused(dir.file("no/such/out.csv")), Catch::Contains("no folder"));
  fs::create_directory(dir.path / "folder");
  CHECK_THAT(refused((dir.path / "folder").string()), Catch::Contains("it is a folder"));
  // A folder that exists but takes no file, even for root.
  CHECK_THAT(refused("/proc/allocsim-out.csv"), Catch::Contains("takes no new file"));
  CHECK(refused(dir.file("fine.csv")).empty());
}

}  // namespace
}  // namespace allocsim
