#include <sys/stat.h>

#include <fstream>
#include <string>
#include <thread>

#include <catch2/catch.hpp>

#include "cli_driver.hpp"
#include "sim/error.hpp"
#include "workloads/mapped_file.hpp"

namespace allocsim {
namespace {

TEST_CASE("a regular file is mapped whole; an empty one is an empty buffer", "[mapped_file]") {
  const test::TempDir dir;
  std::string text(100'000, 'x');
  text += "\nthe end";
  const MappedFile file(dir.file("t.csv", text));
  CHECK(file.mapped());
  CHECK(file.bytes() == text);
  std::ofstream(dir.path / "empty.csv").flush();
  const MappedFile empty(dir.path / "empty.csv");
  CHECK(empty.bytes().empty());
}

TEST_CASE("a FIFO is read into memory, a directory is a read error, a missing file cannot open", "[mapped_file]") {
  const test::TempDir dir;
  const std::string fifo = dir.file("pipe.csv");
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  const std::string text = "time_ns,op,id,bytes\n0,alloc,a,1\n";
  std::thread writer([&] { std::ofstream(fifo) << text; });
  const MappedFile piped(fifo);
  writer.join();
  CHECK_FALSE(piped.mapped());
  CHECK(piped.bytes() == text);
  CHECK_THROWS_WITH(MappedFile(dir.path), Catch::StartsWith(dir.path.string() + ": read error ("));
  CHECK_THROWS_WITH(MappedFile(dir.path / "missing.csv"), (dir.path / "missing.csv").string() + ": cannot open");
}

}  // namespace
}  // namespace allocsim
