// The catalogue's readers: a file goes to the reader that knows its content, else to the
// one its extension names; a file no reader knows is an Error listing them.
#include <filesystem>
#include <string>

#include <catch2/catch.hpp>

#include "cli_driver.hpp"
#include "sim/error.hpp"
#include "workloads/catalogue.hpp"

namespace allocsim {
namespace {

using test::TempDir;

constexpr const char* kTrace = "# a comment first\ntime_ns,op,id,bytes\n0,alloc,a,100\n5,free,a,\n";

TEST_CASE("readers: every reader is listed and claims its own files", "[reader]") {
  REQUIRE(all_readers().size() >= 2);
  CHECK(find_reader(std::string(ALLOCSIM_TEST_DATA) + "/tiny.snapshot.pickle").name == "torch-snapshot");
  TempDir dir;
  CHECK(find_reader(dir.file("t.csv", kTrace)).name == "csv");
}

TEST_CASE("readers: a row says whose format it reads and what its file holds beside requests", "[reader]") {
  const std::string data = ALLOCSIM_TEST_DATA;
  const ReaderInfo& snapshot = find_reader(data + "/tiny.snapshot.pickle");
  CHECK((snapshot.framework == Framework::torch && snapshot.holds == Holds::allocator_state));
  const ReaderInfo& rmm = find_reader(data + "/rmm_pool_oom.dev0.csv");
  CHECK((rmm.framework == Framework::rmm && rmm.holds == Holds::failures));
  TempDir dir;
  const ReaderInfo& csv = find_reader(dir.file("t.csv", kTrace));
  CHECK((csv.framework == Framework::none && csv.holds == Holds::requests));
}

TEST_CASE("readers: a CSV trace is recognised by its header, whatever its name", "[reader]") {
  TempDir dir;
  const std::string path = dir.file("trace.txt", kTrace);  // a '/', no .csv
  CHECK(find_reader(path).name == "csv");
  const Trace trace = load_workload(path);
  CHECK(trace.events.size() == 2);
  const std::string pickle_named = dir.file("trace.pickle", kTrace);
  CHECK(find_reader(pickle_named).name == "csv");
}

TEST_CASE("readers: a pickle named .csv goes to the snapshot reader", "[reader]") {
  TempDir dir;
  const std::filesystem::path copy = dir.path / "snapshot.csv";
  std::filesystem::copy_file(std::string(ALLOCSIM_TEST_DATA) + "/tiny.snapshot.pickle", copy);
  CHECK(find_reader(copy.string()).name == "torch-snapshot");
  CHECK(load_workload(copy.string()).events.size() == 8);
}

TEST_CASE("readers: a file no reader knows is refused, listing the readers", "[reader]") {
  TempDir dir;
  const std::string path = dir.file("notes.txt", "nothing a reader knows\n");
  CHECK_THROWS_WITH(load_workload(path), Catch::Contains("notes.txt") && Catch::Contains("csv") &&
                                             Catch::Contains("torch-snapshot"));
  // By name, the reader's own errors stay: a .csv without our header, a missing file.
  CHECK_THROWS_WITH(load_workload(dir.file("bad.csv", "a,b\n1,2\n")), Catch::Contains("header lacks column"));
  CHECK_THROWS_WITH(load_workload("/nonexistent/t.csv"), Catch::Contains("/nonexistent/t.csv: cannot open"));
  CHECK_THROWS_WITH(load_workload("/nonexistent/trace"), Catch::Contains("/nonexistent/trace: cannot open"));
}

}  // namespace
}  // namespace allocsim
