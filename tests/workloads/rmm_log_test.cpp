// RMM logging_resource_adaptor logs of every historical variant (fixtures in tests/data,
// written by hand from the formats each RMM version printed).
#include <fstream>
#include <iterator>
#include <sstream>

#include <catch2/catch.hpp>

#include "cli_driver.hpp"
#include "sim/error.hpp"
#include "workloads/catalogue.hpp"
#include "workloads/rmm_log.hpp"

namespace allocsim {
namespace {

std::string data(const std::string& name) { return std::string(ALLOCSIM_TEST_DATA) + "/" + name; }

RmmLog read(const std::string& text) {
  std::istringstream in(text);
  return read_rmm_log(in, "log.csv");
}

constexpr std::string_view kHeader = "Thread,Time,Action,Pointer,Size,Stream\n";

TEST_CASE("v0.15: colon before the microseconds, decimal streams, no failure rows", "[rmm-log]") {
  const RmmLog log = read_rmm_log_file(data("rmm_v0.15.csv"));
  const Trace& trace = log.trace;
  REQUIRE(trace.events.size() == 5);
  CHECK(trace.allocations() == 3);  // the reused pointer is a new allocation
  CHECK(trace.bytes_of(AllocId{1}) == 4000);
  CHECK(trace.events[0].time == 0);  // from the first row
  CHECK(trace.events[1].time == 121'000);  // 14:02:11:104633 - 14:02:11:104512
  CHECK(trace.events[3].stream == 1);  // a non-default stream
  CHECK(trace.events[0].stream == 0);
  CHECK(log.failures.empty());
  CHECK(trace.live_lower_bound == 2097152 + 4000);
}

TEST_CASE("v21.04: per-thread default streams become one stream per thread", "[rmm-log]") {
  const RmmLog log = read_rmm_log_file(data("rmm_v21.04.csv"));
  CHECK(log.threads == 2);
  CHECK(log.trace.events[0].stream == 1);
  CHECK(log.trace.events[1].stream == 2);
  CHECK(log.trace.events[2].stream == 1);
  CHECK(log.trace.events[4].stream == 0);  // 0x0: the default stream, shared
}

TEST_CASE("v23.10: failure rows with 0x0, a wrap past midnight, the .devN name", "[rmm-log]") {
  const std::string path = data("rmm_v23.10.dev0.csv");
  CHECK(find_reader(path).name == "rmm-log");
  const RmmLog log = read_rmm_log_file(path);
  REQUIRE(log.failures.size() == 1);
  CHECK(log.failures[0].event == 1);
  CHECK(log.failures[0].line == 3);
  CHECK(log.failures[0].bytes == 16_GiB);
  const Trace& trace = log.trace;
  REQUIRE(trace.events.size() == 4);  // the failed request: an alloc freed at once
  CHECK(trace.events[1].op == Op::alloc);
  CHECK(trace.events[2].op == Op::free);
  CHECK(trace.events[2].id == trace.events[1].id);
  CHECK(trace.events[3].time == 1'200'000);  // 00:00:00.000200 the next day, 1.2 ms after the first row
  CHECK(load_workload(path).events.size() == 4);
}

TEST_CASE("HEAD: hex streams without a prefix, (nil), rows out of time order", "[rmm-log]") {
  const RmmLog log = read_rmm_log_file(data("rmm_head.dev0.csv"));
  const Trace& trace = log.trace;
  REQUIRE(log.failures.size() == 1);
  CHECK(trace.events[1].stream == 1);
  CHECK(trace.events[2].stream == 1);  // the failure on the same stream
  CHECK(trace.events.back().time == trace.events[trace.events.size() - 2].time);  // held at the row before
}

TEST_CASE("25.02 (%llx): pointers and streams in hex without a prefix, a null failure pointer '0'", "[rmm-log]") {
  const RmmLog log = read_rmm_log_file(data("rmm_v25.02.dev1.csv"));
  const Trace& trace = log.trace;
  REQUIRE(trace.events.size() == 6);
  REQUIRE(log.failures.size() == 1);
  CHECK(log.failures[0].bytes == 32_GiB);
  CHECK(trace.events[0].stream == 0);
  CHECK(trace.events[1].stream == 1);
  CHECK(trace.events[4].id == trace.events[0].id);  // `free,7f5a00000000` pairs with its allocate
  CHECK(trace.events[5].id == trace.events[1].id);
  CHECK(trace.live_lower_bound == 32_GiB + 4096 + 8192);  // the failed request counts while it is asked
}

TEST_CASE("an RMM log reads the same from a buffer as from a file", "[rmm-log]") {
  std::ifstream in(data("rmm_v21.04.csv"), std::ios::binary);
  const std::string text{std::istreambuf_iterator<char>(in), {}};
  const RmmLog from_buffer = parse_rmm_log(text, "buffer.csv");
  const RmmLog from_file = read_rmm_log_file(data("rmm_v21.04.csv"));
  REQUIRE(from_buffer.trace.events.size() == from_file.trace.events.size());
  for (std::size_t i = 0; i < from_file.trace.events.size(); ++i) {
    CHECK(from_buffer.trace.events[i].time == from_file.trace.events[i].time);
    CHECK(from_buffer.trace.events[i].stream == from_file.trace.events[i].stream);
  }
  CHECK(from_buffer.threads == 2);
  // No newline at the end, CRLF lines: the last row still counts.
  CHECK(parse_rmm_log("Thread,Time,Action,Pointer,Size,Stream\r\n1,10:00:00.000001,allocate,0x100,10,0",
                          "crlf.csv").trace.events.size() == 1);
  CHECK_THROWS_WITH(parse_rmm_log("Thread,Time\n", "b.csv"),
                    "b.csv:1: header is not Thread,Time,Action,Pointer,Size,Stream");
}

TEST_CASE("a malformed RMM log is one error naming file and line", "[rmm-log]") {
  const std::string header(kHeader);
  CHECK_THROWS_WITH(read("Thread,Time,Action\n"), "log.csv:1: header is not Thread,Time,Action,Pointer,Size,Stream");
  CHECK_THROWS_WITH(read(header + "1,10:00:00.000001,allocate,0x100,10\n"), "log.csv:2: 5 fields, the header has 6");
  CHECK_THROWS_WITH(read(header + "1,10:00:00,allocate,0x100,10,0\n"),
                    "log.csv:2: time '10:00:00' is not HH:MM:SS.uuuuuu (or HH:MM:SS:uuuuuu)");
  CHECK_THROWS_WITH(read(header + "1,10:00:00.000001,reallocate,0x100,10,0\n"),
                    "log.csv:2: unknown action 'reallocate' (allocate, free, allocate failure)");
  CHECK_THROWS_WITH(read(header + "1,10:00:00.000001,free,0x100,10,0\n"), "log.csv:2: free of id 0x100, which is not live");
  CHECK_THROWS_WITH(read(header + "1,10:00:00.000001,allocate,0x100,10,0\n1,10:00:00.000002,free,0x100,11,0\n"),
                    "log.csv:3: free of 0x100 says 11 bytes, its allocate said 10");
  CHECK_THROWS_WITH(read(header + "1,10:00:00.000001,allocate,(nil),10,0\n"),
                    "log.csv:2: pointer '(nil)' is not a device address");
  CHECK_THROWS_WITH(read(header), "log.csv: empty trace: no events");
}

TEST_CASE("an RMM log is claimed by its header, whatever its name", "[rmm-log]") {
  CHECK(claims_rmm_log("x.txt", "Thread,Time,Action,Pointer,Size,Stream\r\n1,...") == Claim::by_content);
  CHECK(claims_rmm_log("rmm_log.dev3", "") == Claim::by_name);
  CHECK(claims_rmm_log("trace.csv", "time_ns,op,id,bytes\n") == Claim::no);
  // RMM's Python puts the device before the extension: rmm_log.dev0.csv.
  CHECK(claims_rmm_log("out/rmm_log.dev0.csv", "") == Claim::by_name);
  CHECK(claims_rmm_log("out/rmm_log.dev12.txt", "") == Claim::by_name);
  CHECK(claims_rmm_log("out.dev0/trace.csv", "") == Claim::no);
  CHECK(claims_rmm_log("rmm_log.device.csv", "") == Claim::no);
  // A log saved by a Windows editor opens with a byte order mark.
  CHECK(claims_rmm_log("x.csv", "\xEF\xBB\xBFThread,Time,Action,Pointer,Size,Stream\n") == Claim::by_content);
}

TEST_CASE("an RMM log with a byte order mark, named .csv, goes to the RMM reader", "[rmm-log]") {
  test::TempDir dir;
  const std::string path =
      dir.file("rmm_log.dev0.csv", "\xEF\xBB\xBFThread,Time,Action,Pointer,Size,Stream\n1,10:00:00.000001,allocate,0x100,10,0\n");
  CHECK(find_reader(path).name == "rmm-log");
  CHECK(load_workload(path).events.size() == 1);
}

}  // namespace
}  // namespace allocsim
