// PyTorch profiler (Kineto) Chrome traces: [memory] events paired by address, checked
// against Total Allocated; the fixture is hand-written with the fields profiler_kineto.cpp
// writes.
#include <string>

#include <catch2/catch.hpp>

#include "cli_driver.hpp"
#include "sim/error.hpp"
#include "workloads/catalogue.hpp"
#include "workloads/kineto_trace.hpp"

namespace allocsim {
namespace {

using Catch::Contains;

const std::string kFixture = std::string(ALLOCSIM_TEST_DATA) + "/kineto_two_gpus.pt.trace.json";

// One [memory] event of device 0 as Kineto writes it.
std::string memory(double ts, long long bytes, long long addr, std::string total = "") {
  return R"({"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]", "pid": 1, "tid": 1, "ts": )" +
         std::to_string(ts) + R"(, "args": {"Device Type": 1, "Device Id": 0, "Addr": )" + std::to_string(addr) +
         R"(, "Bytes": )" + std::to_string(bytes) + (total.empty() ? "" : R"(, "Total Allocated": )" + total) + "}}";
}

std::string trace_of(const std::string& events) { return R"({"traceEvents": [)" + events + "]}"; }

TEST_CASE("kineto: allocations and frees pair by address on the chosen GPU", "[kineto]") {
  const KinetoTrace read = read_kineto_trace_file(kFixture, 0);
  const Trace& trace = read.trace;
  CHECK(read.device == 0);
  CHECK(read.preexisting == 1);    // the 512 B block freed at ts 102.0, allocated before profiling
  CHECK(read.other_events == 2);   // the CPU's event and device 1's
  REQUIRE(trace.events.size() == 6);
  CHECK(trace.events[0].op == Op::alloc);  // the block from before profiling, at the start
  CHECK(trace.bytes_of(trace.events[0].id) == 512);
  CHECK(trace.bytes_of(trace.events[1].id) == 1024);
  CHECK(trace.events[2].time == 500);  // ts 100.75 us - 100.25 us
  CHECK(trace.events[3].op == Op::free);
  CHECK(trace.events[3].id == trace.events[1].id);
  CHECK(trace.events[4].id == trace.events[0].id);
  CHECK(trace.events[4].time == 1750);
  CHECK(trace.bytes_of(trace.events[5].id) == 4096);  // the address reused: a new allocation
  CHECK(trace.events[5].id != trace.events[1].id);
  CHECK(trace.live_lower_bound == 2048 + 4096);
  CHECK(trace.info.source == "kineto");
  CHECK(read_kineto_trace_file(kFixture, 1).trace.events.size() == 1);
}

TEST_CASE("kineto: several GPUs need --cuda-device, as snapshots do", "[kineto]") {
  CHECK_THROWS_WITH(read_kineto_trace_file(kFixture),
                    Contains("2 devices have [memory] events: 0 (5 [memory] events), 1 (1 [memory] events)") &&
                        Contains("--cuda-device N"));
  CHECK_THROWS_WITH(read_kineto_trace_file(kFixture, 3), Contains("no [memory] events on device 3"));
  CHECK(find_reader(kFixture).name == "kineto");
  CHECK(load_workload(kFixture, LoadOptions{0}).events.size() == 6);
}

TEST_CASE("kineto: Total Allocated is checked event by event", "[kineto]") {
  // 100 B live before profiling; the third event's total says 100 B more than its events.
  const std::string text = trace_of(memory(1.0, 256, 4096, "356") + "," + memory(2.0, 512, 8192, "868") + "," +
                                    memory(3.0, -256, 4096, "712"));
  CHECK_THROWS_WITH(parse_kineto_trace(text, "t.json"),
                    Contains("t.json: [memory] event 2 (ts 3 us): Total Allocated is 712 B") &&
                        Contains("make it 612 B") && Contains("missing or out of order"));
  // Without the mismatch it reads; an event without Total Allocated is not checked.
  CHECK(parse_kineto_trace(trace_of(memory(1.0, 256, 4096, "356") + "," + memory(2.0, 512, 8192)), "t.json")
            .trace.events.size() == 2);
}

TEST_CASE("kineto: a bare array of events, args before name, other nested fields ignored", "[kineto]") {
  std::string text(1, '[');  // built step by step: GCC 12 warns falsely on "[" + string
  text += memory(1.0, 256, 4096, "256");
  text += R"(, {"args": {"Device Type": 1, "Device Id": 0, "Addr": 4096, "Bytes": -256, "nested": {"Bytes": 7}},
            "extra": {"Bytes": 9, "Addr": 1}, "ph": "i", "ts": 2.5, "name": "[memory]"}])";
  const Trace trace = parse_kineto_trace(text, "bare.json").trace;
  REQUIRE(trace.events.size() == 2);
  CHECK(trace.events[1].op == Op::free);
  CHECK(trace.events[1].time == 1500);
}

TEST_CASE("kineto: order by ts, the file's order among equal times", "[kineto]") {
  // Written out of order: the free at ts 2 comes first in the file.
  const std::string text = trace_of(memory(2.0, -256, 4096, "0") + "," + memory(1.0, 256, 4096, "256"));
  const Trace trace = parse_kineto_trace(text, "t.json").trace;
  REQUIRE(trace.events.size() == 2);
  CHECK(trace.events[0].op == Op::alloc);
  CHECK(trace.events[1].time == 1000);
}

TEST_CASE("kineto: what cannot be replayed is refused with the reason", "[kineto]") {
  const std::string no_addr = trace_of(
      R"({"ph": "i", "name": "[memory]", "ts": 1, "args": {"Device Type": 1, "Device Id": 0, "Bytes": 512}})");
  CHECK_THROWS_WITH(parse_kineto_trace(no_addr, "old.json"),
                    Contains("old.json: [memory] event 0 has no Addr") && Contains("PyTorch 1.8 and 1.9"));
  CHECK_THROWS_WITH(parse_kineto_trace(trace_of(memory(1.0, 256, 4096) + "," + memory(2.0, -128, 4096)), "t.json"),
                    Contains("frees 128 B at Addr 4096, which [memory] event 0 allocated with 256 B"));
  CHECK_THROWS_WITH(parse_kineto_trace(trace_of(memory(1.0, 256, 4096) + "," + memory(2.0, 256, 4096)), "t.json"),
                    Contains("allocates Addr 4096, which [memory] event 0 allocated and no event freed"));
  CHECK_THROWS_WITH(parse_kineto_trace(trace_of(memory(1.0, -256, 4096) + "," + memory(2.0, -256, 4096)), "t.json"),
                    Contains("frees Addr 4096, which [memory] event 0 freed and no event allocated since"));
  CHECK_THROWS_WITH(parse_kineto_trace(trace_of(R"({"ph": "X", "name": "aten::mm", "ts": 1})"), "t.json"),
                    Contains("no [memory] events") && Contains("profile_memory=True"));
  CHECK_THROWS_WITH(parse_kineto_trace("{\"traceEvents\": [", "cut.json"), Contains("cut.json: not valid JSON"));
  CHECK_THROWS_WITH(parse_kineto_trace(std::string("\x1f\x8b\x08\x00", 4), "t.json.gz"), Contains("gzip"));
  CHECK_THROWS_WITH(parse_kineto_trace("{\"a\": 1}", "other.json"), Contains("not a Chrome trace"));
}

TEST_CASE("kineto: claimed by content, else by a .json name", "[kineto]") {
  CHECK(claims_kineto_trace("x.txt", "{\n  \"schemaVersion\": 1, \"traceEvents\": [") == Claim::by_content);
  CHECK(claims_kineto_trace("x.txt", "[{\"ph\": \"i\", \"name\": \"[memory]\"") == Claim::by_content);
  CHECK(claims_kineto_trace("run.json", "") == Claim::by_name);
  CHECK(claims_kineto_trace("trace.csv", "time_ns,op,id,bytes\n") == Claim::no);
  CHECK(names_a_file("rank0.pt.trace.json"));
}

}  // namespace
}  // namespace allocsim
