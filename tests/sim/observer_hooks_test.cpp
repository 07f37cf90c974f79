// The engine's block and segment hooks (Observer::on_block, on_segment, on_exit), on
// traces small enough to write every expected call down.
#include <algorithm>
#include <iterator>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "policies/registry.hpp"
#include "sim/engine.hpp"

namespace allocsim {
namespace {

// Writes each call down as one short line.
class Recorder final : public Observer {
 public:
  void on_event(const Sample&) override {}
  void on_block(const BlockEvent& e) override {
    const char* what = e.action == BlockAction::placed ? "place" : e.action == BlockAction::freed ? "free" : "move";
    calls.push_back(std::string(what) + " t" + std::to_string(e.tenant) + " e" + std::to_string(e.event) + " id" +
                    std::to_string(index_of(e.id)) + " " + std::to_string(e.size) + "/" + std::to_string(e.requested) +
                    " s" + std::to_string(e.stream) + (e.action == BlockAction::moved ? " from " + std::to_string(e.from - base) : "") +
                    " at " + std::to_string(e.addr - base));
  }
  void on_segment(const SegmentEvent& e) override {
    if (base == 0) base = e.addr;
    const char* what = e.action == SegmentAction::alloc ? "malloc" : e.action == SegmentAction::free ? "cudafree"
                       : e.action == SegmentAction::map ? "map" : "unmap";
    calls.push_back(std::string(what) + " t" + std::to_string(e.tenant) + " e" + std::to_string(e.event) + " " +
                    std::to_string(e.bytes) + " s" + std::to_string(e.stream) + " at " + std::to_string(e.addr - base));
  }
  void on_exit(std::size_t tenant, Nanos time) override {
    calls.push_back("exit t" + std::to_string(tenant) + " at " + std::to_string(time));
  }
  Addr base = 0;  // the first segment's address: the rest relative to it
  std::vector<std::string> calls;
};

Scenario scenario_of(std::shared_ptr<const Trace> trace, std::string policy) {
  Scenario scenario;
  scenario.device.cost = CostModel{0, 0, 0, 0, 1};  // free device calls: times stay as written
  scenario.tenants.push_back(TenantSpec{std::move(trace), policy_maker(std::move(policy)), 0});
  return scenario;
}

TEST_CASE("observer hooks: a segment comes before its block, the block's free before the segment's", "[engine][observer]") {
  // direct: one cudaMalloc of exactly each request, freed with it; the device's next
  // address is 512-aligned, so b's segment starts 1024 B after a's. Event 2 is
  // a free; b is still live at the end, freed by the exit after on_exit.
  TraceBuilder builder({"hand", "test"});
  const AllocId a = builder.alloc(10, 1000, 1);
  builder.alloc(20, 512, 0);
  builder.free(30, a);
  Recorder recorder;
  Observer* observers[] = {&recorder};
  run(scenario_of(std::make_shared<const Trace>(std::move(builder).finish()), "direct"), observers);
  const std::vector<std::string> expected{
      "malloc t0 e0 1000 s1 at 0",  "place t0 e0 id0 1000/1000 s1 at 0",
      "malloc t0 e1 512 s0 at 1024", "place t0 e1 id1 512/512 s0 at 1024",
      "free t0 e2 id0 1000/1000 s1 at 0", "cudafree t0 e2 1000 s1 at 0",
      "exit t0 at 30",
      "free t0 e3 id1 512/512 s0 at 1024", "cudafree t0 e3 512 s0 at 1024"};
  CHECK(recorder.calls == expected);
}

TEST_CASE("observer hooks: nothing is told without an observer's asking, and the outcome is the same", "[engine][observer]") {
  TraceBuilder builder({"hand", "test"});
  const AllocId a = builder.alloc(0, 3_MiB);
  builder.alloc(1, 100);
  builder.free(2, a);
  const auto trace = std::make_shared<const Trace>(std::move(builder).finish());
  Recorder recorder;
  Observer* observers[] = {&recorder};
  const RunResult watched = run(scenario_of(trace, "caching"), observers);
  const RunResult plain = run(scenario_of(trace, "caching"));
  CHECK(watched.tenants[0].peak_reserved == plain.tenants[0].peak_reserved);
  CHECK(watched.tenants[0].device_mallocs == plain.tenants[0].device_mallocs);
  // caching: a 20 MiB large-pool segment for 3 MiB, a 2 MiB small-pool one for 100 B (512 B).
  CHECK(recorder.calls.front() == "malloc t0 e0 20971520 s0 at 0");
  CHECK(std::count(recorder.calls.begin(), recorder.calls.end(), "exit t0 at 2") == 1);
}

TEST_CASE("observer hooks: the exit frees what is live in the order it was allocated", "[engine][observer]") {
  // d takes the engine's slot a left, ahead of b and c: the exit still frees b, c, d.
  TraceBuilder builder({"hand", "test"});
  const AllocId a = builder.alloc(0, 512);
  builder.alloc(1, 1024);
  builder.alloc(2, 1536);
  builder.free(3, a);
  builder.alloc(4, 2048);
  Recorder recorder;
  Observer* observers[] = {&recorder};
  run(scenario_of(std::make_shared<const Trace>(std::move(builder).finish()), "direct"), observers);
  std::vector<std::string> exit_frees;
  const auto exit = std::find(recorder.calls.begin(), recorder.calls.end(), "exit t0 at 4");
  REQUIRE(exit != recorder.calls.end());
  std::copy_if(exit, recorder.calls.end(), std::back_inserter(exit_frees),
               [](const std::string& call) { return call.starts_with("free"); });
  const std::vector<std::string> expected{"free t0 e5 id1 1024/1024 s0 at 512", "free t0 e5 id2 1536/1536 s0 at 1536",
                                          "free t0 e5 id3 2048/2048 s0 at 3072"};
  CHECK(exit_frees == expected);
}

TEST_CASE("observer hooks: a moved block keeps the stream it was placed on", "[engine][observer]") {
  // compact (slide) in one 4 KiB region: b and d, on stream 1, slide down over the holes
  // a and c leave, for e's 2 KiB (tests/policies/compact_test.cpp works the moves out).
  TraceBuilder builder({"hand", "test"});
  const AllocId a = builder.alloc(0, 1024, 0);
  builder.alloc(1, 1024, 1);
  const AllocId c = builder.alloc(2, 1024, 0);
  builder.alloc(3, 1024, 1);
  builder.free(4, a);
  builder.free(5, c);
  builder.alloc(6, 2048, 0);
  Scenario scenario = scenario_of(std::make_shared<const Trace>(std::move(builder).finish()),
                                  "compact:region=4096,strategy=slide");
  scenario.device.capacity = 8_KiB;
  Recorder recorder;
  Observer* observers[] = {&recorder};
  run(scenario, observers);
  std::vector<std::string> moves;
  std::copy_if(recorder.calls.begin(), recorder.calls.end(), std::back_inserter(moves),
               [](const std::string& call) { return call.starts_with("move"); });
  const std::vector<std::string> expected{"move t0 e6 id1 1024/1024 s1 from 1024 at 0",
                                          "move t0 e6 id3 1024/1024 s1 from 3072 at 1024"};
  CHECK(moves == expected);
}

}  // namespace
}  // namespace allocsim
