#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <sstream>
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

// The bytes of `file`'s mapping this process holds in memory (its Rss in /proc/self/smaps).
std::size_t resident(const MappedFile& file) {
  const auto start = reinterpret_cast<std::uintptr_t>(file.bytes().data());
  std::ifstream smaps("/proc/self/smaps");
  bool inside = false;
  for (std::string line; std::getline(smaps, line);) {
    std::uintptr_t from = 0;
    std::istringstream range(line);
    if (range >> std::hex >> from && range.get() == '-') {
      inside = from == start;
    } else if (inside && line.starts_with("Rss:")) {
      return std::stoull(line.substr(4)) * 1024;
    }
  }
  FAIL("no mapping at the file's bytes in /proc/self/smaps");
  return 0;
}

std::size_t touch(const MappedFile& file, std::size_t page) {
  std::size_t sum = 0;
  for (std::size_t at = 0; at < file.bytes().size(); at += page) sum += static_cast<unsigned char>(file.bytes()[at]);
  return sum;
}

TEST_CASE("count() reads a mapped file through a buffer, leaving its mapping untouched; a read file counts in memory",
          "[mapped_file]") {
  const test::TempDir dir;
  std::string text;
  for (std::size_t i = 0; i < 300'000; ++i) {  // past one buffer of kCopyWindow bytes
    text += i % 7 == 0 ? "\n" : std::to_string(i % 10);
  }
  REQUIRE(text.size() > kCopyWindow);
  const MappedFile file(dir.file("t.csv", text));
  REQUIRE(file.mapped());
  const auto newlines = static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n'));
  CHECK(file.count('\n') == newlines);
  CHECK(file.count('3') == static_cast<std::size_t>(std::count(text.begin(), text.end(), '3')));
  CHECK(resident(file) == 0);  // no page of the mapping was faulted in

  const std::string fifo = dir.file("pipe.csv");
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  std::thread writer([&] { std::ofstream(fifo) << text; });
  const MappedFile piped(fifo);
  writer.join();
  REQUIRE_FALSE(piped.mapped());
  CHECK(piped.count('\n') == newlines);
}

// count() sums matches in a byte, a part of at most 255 bytes at a time: a text of nothing but
// the byte counted, far longer than one part (and one part plus one), must not wrap.
TEST_CASE("count() of a text that is the counted byte throughout", "[mapped_file]") {
  const test::TempDir dir;
  for (const std::size_t size : {std::size_t{255}, std::size_t{256}, std::size_t{70'000}}) {
    INFO(size << " newlines");
    const std::string text(size, '\n');
    const MappedFile file(dir.file("t.csv", text));
    REQUIRE(file.mapped());
    CHECK(file.count('\n') == size);
    CHECK(file.count('x') == 0);
    const std::string fifo = dir.file("pipe" + std::to_string(size) + ".csv");
    REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
    std::thread writer([&] { std::ofstream(fifo) << text; });
    const MappedFile piped(fifo);
    writer.join();
    REQUIRE_FALSE(piped.mapped());
    CHECK(piped.count('\n') == size);
  }
}

TEST_CASE("release gives back whole pages in its range, whatever was released before; the bytes stay readable",
          "[mapped_file]") {
  const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  const test::TempDir dir;
  std::string text;
  for (std::size_t i = 0; i < 16; ++i) text += std::string(page, static_cast<char>('a' + i));
  MappedFile file(dir.file("t.csv", text));
  REQUIRE(file.mapped());
  const std::size_t sum = touch(file, page);
  const std::size_t full = resident(file);
  REQUIRE(full == 16 * page);
  file.release(page + 1, 3 * page);  // only page 2 is whole inside
  CHECK(resident(file) == full - page);
  file.release_before(4 * page);  // pages 0 to 3
  CHECK(resident(file) == full - 4 * page);
  CHECK(touch(file, page) == sum);  // read back from the file
  CHECK(file.bytes() == text);
  const std::size_t again = resident(file);
  file.release_before(page);  // monotonic: page 0 was handed back already
  CHECK(resident(file) == again);
  file.release(0, page);  // stateless: a second pass gives it back again
  CHECK(resident(file) == again - page);
}

}  // namespace
}  // namespace allocsim
