// PyTorch profiler (Kineto) Chrome traces: [memory] events paired by address, checked
// against Total Allocated; the fixture is hand-written with the fields profiler_kineto.cpp
// writes.
#include <string>
#include <vector>

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

// One [memory] event of device 0 on thread `tid` with its per-thread `Ev Idx`.
std::string on_thread(int tid, int index, double ts, long long bytes, long long addr, long long total) {
  return R"({"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]", "pid": 1, "tid": )" +
         std::to_string(tid) + R"(, "ts": )" + std::to_string(ts) + R"(, "args": {"Device Type": 1, "Device Id": 0, "Addr": )" +
         std::to_string(addr) + R"(, "Bytes": )" + std::to_string(bytes) + R"(, "Total Allocated": )" +
         std::to_string(total) + R"(, "Ev Idx": )" + std::to_string(index) + "}}";
}

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

TEST_CASE("kineto: two threads whose event indices interleave read in time order", "[kineto]") {
  // The main thread (tid 10) and the autograd thread (tid 20) each count Ev Idx from 0. By
  // index alone the order would be 10/0, 20/0, 10/1, ... and Total Allocated would break.
  const std::string text = trace_of(on_thread(10, 0, 1.0, 256, 4096, 256) + "," +     // main: alloc A
                                    on_thread(10, 1, 2.0, 1024, 8192, 1280) + "," +   // main: alloc C
                                    on_thread(10, 2, 3.0, -256, 4096, 1024) + "," +   // main: free A
                                    on_thread(20, 0, 4.0, 512, 12288, 1536) + "," +   // autograd: alloc B
                                    on_thread(20, 1, 5.0, -512, 12288, 1024) + "," +  // autograd: free B
                                    on_thread(20, 2, 6.0, -1024, 8192, 0));           // autograd: free C
  const Trace trace = parse_kineto_trace(text, "threads.json").trace;
  REQUIRE(trace.events.size() == 6);
  const std::vector<Bytes> bytes{256, 1024, 256, 512, 512, 1024};
  const std::vector<Op> ops{Op::alloc, Op::alloc, Op::free, Op::alloc, Op::free, Op::free};
  for (std::size_t i = 0; i < trace.events.size(); ++i) {
    CHECK(trace.events[i].time == i * 1000);
    CHECK(trace.events[i].op == ops[i]);
    CHECK(trace.bytes_of(trace.events[i].id) == bytes[i]);
  }
  CHECK(trace.events[5].id == trace.events[1].id);  // C: allocated on one thread, freed on the other
}

TEST_CASE("kineto: at one time, by thread id, then by the index within a thread", "[kineto]") {
  // All at ts 1: thread 20's events come after thread 10's whatever the file's order, and
  // within a thread the index orders them (written here in reverse).
  const std::string text = trace_of(on_thread(20, 4, 1.0, -512, 12288, 0) + "," +   // free B
                                    on_thread(20, 3, 1.0, 512, 12288, 512) + "," +   // alloc B
                                    on_thread(10, 8, 1.0, -256, 4096, 0) + "," +     // free A
                                    on_thread(10, 7, 1.0, 256, 4096, 256));          // alloc A
  const Trace trace = parse_kineto_trace(text, "ties.json").trace;
  REQUIRE(trace.events.size() == 4);
  CHECK(trace.bytes_of(trace.events[0].id) == 256);
  CHECK(trace.events[1].op == Op::free);
  CHECK(trace.bytes_of(trace.events[2].id) == 512);
  CHECK(trace.events[3].op == Op::free);
  // The same events in another file order read the same.
  const std::string shuffled = trace_of(on_thread(10, 7, 1.0, 256, 4096, 256) + "," +
                                        on_thread(20, 3, 1.0, 512, 12288, 512) + "," +
                                        on_thread(10, 8, 1.0, -256, 4096, 0) + "," +
                                        on_thread(20, 4, 1.0, -512, 12288, 0));
  const Trace again = parse_kineto_trace(shuffled, "ties.json").trace;
  REQUIRE(again.events.size() == 4);
  for (std::size_t i = 0; i < 4; ++i) {
    CHECK(again.events[i].op == trace.events[i].op);
    CHECK(again.bytes_of(again.events[i].id) == trace.bytes_of(trace.events[i].id));
  }
  // A later index at an earlier time still reads by time: the index orders only ties.
  const std::string by_time = trace_of(on_thread(10, 1, 1.0, 256, 4096, 256) + "," + on_thread(10, 0, 2.0, -256, 4096, 0));
  CHECK(parse_kineto_trace(by_time, "t.json").trace.events[0].op == Op::alloc);
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
