// The data of a run's HTML page: the free blocks at an OOM worked out from where the blocks
// were, the memory map's cap, every tenant a lane.
#include <algorithm>
#include <set>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "policies/registry.hpp"
#include "studies/compare.hpp"
#include "studies/run_report.hpp"
#include "workloads/torch_recording.hpp"

namespace allocsim {
namespace {

using nlohmann::json;

struct Recorded {
  Scenario scenario;
  RunRecorders recorders;
  RunResult result;
};

void replay(Recorded& r) {
  const std::vector<Observer*> observers = r.recorders.observers();
  r.result = run(r.scenario, observers);
}

json data_of(const Recorded& r, std::size_t cap = kMapBlocks) {
  const ReportedRun reported{"", r.scenario, r.result, r.recorders};
  return json::parse(run_report_data("title", "run --workload x", {&reported, 1}, cap));
}

TEST_CASE("a run's page tells the free blocks at a fragmentation OOM", "[report]") {
  // The seed article's case: eight 1 GiB tensors in bfc's one region, every other one
  // freed, then 3 GiB: four holes, three of 1 GiB and the last one with the region's tail.
  TraceBuilder builder({"fragmentation", "test"});
  std::vector<AllocId> ids;
  for (int i = 0; i < 8; ++i) ids.push_back(builder.alloc(1000 * i, 1_GiB, 0, Tag::activation));
  for (int i = 1; i < 8; i += 2) builder.free(8000 + 1000 * i, ids[i]);
  builder.free(20000, builder.alloc(19000, 3_GiB, 0, Tag::activation));
  Recorded r;
  r.scenario.device.capacity = 10_GiB;
  r.scenario.tenants.push_back(TenantSpec{std::make_shared<const Trace>(std::move(builder).finish()), policy_maker("bfc"), 0});
  replay(r);
  const json page = data_of(r);
  REQUIRE(page["lanes"].size() == 1);
  const json& lane = page["lanes"][0];
  REQUIRE(lane["ooms"].size() == 1);
  const json& oom = lane["ooms"][0];
  CHECK(oom["kind"] == "fragmentation");
  CHECK(oom["event"] == 12);
  const json& free = oom["free"];
  const Bytes segments = free["segments_bytes"].get<Bytes>();
  REQUIRE(segments >= 8_GiB);
  CHECK(free["count"] == 4);
  CHECK(free["bytes"].get<Bytes>() == segments - 4_GiB);
  CHECK(free["largest"][0][1].get<Bytes>() == segments - 7_GiB);
  // bfc's own account of its largest free chunk agrees with the one found from the blocks.
  CHECK(free["largest"][0][1].get<Bytes>() == r.result.tenants[0].ooms[0].context.policy.largest_free);
  for (std::size_t i = 1; i < 4; ++i) CHECK(free["largest"][i][1].get<Bytes>() == 1_GiB);
  CHECK(oom["text"].get<std::string>().find("fragmentation") != std::string::npos);
  CHECK(lane["verdict"] == "fragmentation");
  CHECK(lane["verdict_detail"]["text"].get<std::string>().find("does not fit (fragmentation)") != std::string::npos);
  // The map draws the eight blocks (the OOM's request never was one) in one segment.
  CHECK(lane["map"]["shown_blocks"] == 8);
  CHECK(lane["map"]["segments"].size() == 1);
  CHECK(lane["map"]["extent"].get<Bytes>() == segments);
}

TEST_CASE("the memory map keeps the blocks largest in bytes x lifetime and says how many it left out", "[report]") {
  TraceBuilder builder({"sizes", "test"});
  std::vector<AllocId> ids;
  for (int i = 0; i < 6; ++i) ids.push_back(builder.alloc(i, 1_KiB * (1 + (i * 5) % 6), 0, Tag::weight));  // 1,6,5,4,3,2 KiB
  for (int i = 0; i < 6; ++i) builder.free(100 + i, ids[i]);
  Recorded r;
  r.scenario.device.capacity = 1_MiB;
  r.scenario.tenants.push_back(TenantSpec{std::make_shared<const Trace>(std::move(builder).finish()), policy_maker("direct"), 0});
  replay(r);
  const json map = data_of(r, 2)["lanes"][0]["map"];
  CHECK(map["total_blocks"] == 6);
  CHECK(map["shown_blocks"] == 2);
  std::set<Bytes> sizes;
  for (const json& block : map["blocks"]) sizes.insert(block[1].get<Bytes>());
  CHECK(sizes == std::set<Bytes>{5_KiB, 6_KiB});
  CHECK(data_of(r)["lanes"][0]["map"]["shown_blocks"] == 6);
}

TEST_CASE("every tenant is a lane with its own series, map and peak", "[report]") {
  TraceBuilder a({"a", "test"});
  a.free(10, a.alloc(0, 4_KiB, 0, Tag::weight, "conv1"));
  TraceBuilder b({"b", "test"});
  b.free(10, b.alloc(5, 8_KiB, 0, Tag::activation, "fc"));
  Recorded r;
  r.scenario.device.capacity = 1_MiB;
  r.scenario.tenants.push_back(TenantSpec{std::make_shared<const Trace>(std::move(a).finish()), policy_maker("direct"), 0});
  r.scenario.tenants.push_back(TenantSpec{std::make_shared<const Trace>(std::move(b).finish()), policy_maker("bestfit"), 0});
  replay(r);
  const json page = data_of(r);
  REQUIRE(page["lanes"].size() == 2);
  CHECK(page["lanes"][0]["label"] == "tenant 0: direct");
  CHECK(page["lanes"][1]["label"] == "tenant 1: bestfit");
  CHECK(page["lanes"][1]["peak"]["layers"][0] == json::array({"fc", 8_KiB}));
  CHECK(page["lanes"][0]["peak"]["by_tag"][0] == json::array({"weight", 4_KiB}));
  CHECK(!page["lanes"][0]["series"].empty());
  CHECK(page["lanes"][1]["map"]["layers"] == json::array({"fc"}));
  CHECK(page["runs"][0]["capacity_bytes"] == 1_MiB);
  CHECK(page["runs"][0]["brief"]["capacity_bytes"] == "1 MiB");
}

TEST_CASE("an expandable policy's free blocks at an OOM are its mapped free space, as its own figures say", "[report]") {
  // 200 MiB mapped in one call and freed; 60 MiB placed at its start; empty_cache() unmaps
  // the 140 MiB after it: part of the range mapped in one call. Then 2 GiB, which cannot fit.
  TraceBuilder builder({"expandable", "test"});
  builder.free(10, builder.alloc(0, 200_MiB, 0, Tag::activation));
  builder.alloc(20, 60_MiB, 0, Tag::activation);
  builder.release(30);
  builder.alloc(40, 2_GiB, 0, Tag::activation);
  Recorded r;
  r.scenario.device.capacity = 1_GiB;
  r.scenario.tenants.push_back(TenantSpec{std::make_shared<const Trace>(std::move(builder).finish()), policy_maker("expandable"), 0});
  replay(r);
  const json page = data_of(r);
  const json& oom = page["lanes"][0]["ooms"].at(0);
  const OomContext& context = r.result.tenants[0].ooms.at(0).context;
  REQUIRE(context.policy.reserved == 60_MiB);
  const json& free = oom["free"];
  CHECK(free["mapped"] == true);
  // The table, the "free in the pool" and the "largest free block" of the OOM's line agree.
  CHECK(free["segments_bytes"].get<Bytes>() == context.policy.reserved);
  CHECK(free["bytes"].get<Bytes>() == context.policy.reserved - context.policy.allocated);
  const Bytes largest = free["largest"].empty() ? 0 : free["largest"][0][1].get<Bytes>();
  CHECK(largest == context.policy.largest_free);
  // The map's grey is what was mapped: 200 MiB until the release, then only the first 60.
  Bytes mapped_at_end = 0;
  for (const json& segment : page["lanes"][0]["map"]["segments"]) {
    if (segment[5].get<std::size_t>() == page["lanes"][0]["events_replayed"].get<std::size_t>()) {
      mapped_at_end += segment[1].get<Bytes>();
    }
  }
  CHECK(mapped_at_end == 60_MiB);
}

TEST_CASE("an expandable policy's free blocks span the ranges it mapped in several calls", "[report]") {
  // 20 MiB pages. a (30 MiB) maps [0, 40); b (20 MiB) takes [30, 50), mapping [40, 60) in a
  // second call; c (10 MiB) takes [50, 60). b freed: one free block [30, 50) across the two
  // ranges, in partial pages that the OOM's release cannot unmap.
  TraceBuilder builder({"expandable", "test"});
  builder.alloc(0, 30_MiB, 0, Tag::activation);
  const AllocId b = builder.alloc(10, 20_MiB, 0, Tag::activation);
  builder.alloc(20, 10_MiB, 0, Tag::activation);
  builder.free(30, b);
  builder.alloc(40, 2_GiB, 0, Tag::activation);
  Recorded r;
  r.scenario.device.capacity = 1_GiB;
  r.scenario.tenants.push_back(TenantSpec{std::make_shared<const Trace>(std::move(builder).finish()), policy_maker("expandable"), 0});
  replay(r);
  const json page = data_of(r);
  REQUIRE(page["lanes"][0]["map"]["segments"].size() == 2);
  const json& free = page["lanes"][0]["ooms"].at(0)["free"];
  const OomContext& context = r.result.tenants[0].ooms.at(0).context;
  CHECK(free["count"] == 1);
  CHECK(free["bytes"].get<Bytes>() == 20_MiB);
  REQUIRE(!free["largest"].empty());
  CHECK(free["largest"][0][1].get<Bytes>() == context.policy.largest_free);
  CHECK(context.policy.largest_free == 20_MiB);
}

TEST_CASE("an OOM's free blocks and policy state are told once while they stay the same", "[report]") {
  // bfc's one region, every other 1 GiB tensor freed; 3 GiB asked three times (the state
  // does not change), then a hole filled and 3 GiB asked again (it does). The engine asks
  // the policy for its account once, at the first OOM.
  TraceBuilder builder({"fragmentation", "test"});
  std::vector<AllocId> ids;
  for (int i = 0; i < 8; ++i) ids.push_back(builder.alloc(1000 * i, 1_GiB, 0, Tag::activation));
  for (int i = 1; i < 8; i += 2) builder.free(8000 + 1000 * i, ids[i]);
  for (int i = 0; i < 3; ++i) builder.alloc(20000 + i, 3_GiB, 0, Tag::activation);
  builder.alloc(30000, 1_GiB, 0, Tag::activation);
  builder.alloc(40000, 3_GiB, 0, Tag::activation);
  Recorded r;
  r.scenario.device.capacity = 10_GiB;
  r.scenario.on_oom = OnOom::continue_run;
  r.scenario.tenants.push_back(TenantSpec{std::make_shared<const Trace>(std::move(builder).finish()), policy_maker("bfc"), 0});
  replay(r);
  const json ooms = data_of(r)["lanes"][0]["ooms"];
  REQUIRE(ooms.size() == 4);
  CHECK(ooms[0]["free"]["count"] == 4);
  CHECK(!ooms[0]["state"].get<std::string>().empty());
  for (std::size_t i = 1; i < 3; ++i) {
    CHECK(ooms[i]["free"].is_null());
    CHECK(ooms[i]["free_as_at"] == ooms[0]["event"]);
    CHECK(ooms[i]["state"] == "");
    CHECK(!ooms[i]["text"].get<std::string>().empty());
  }
  CHECK(ooms[3]["free"]["count"] == 3);
  CHECK(!ooms[3].contains("free_as_at"));
}

TEST_CASE("a recording's blocks, all tagged other, are coloured by their first frame outside torch", "[report]") {
  // What the snapshot reader makes of a snapshot with frames: every tag other, the
  // frames as layers.
  TraceBuilder builder({"recording", "test"});
  const AllocId a = builder.alloc(0, 4_MiB, 0, Tag::other, "model.py:42 forward");
  const AllocId b = builder.alloc(1, 1_MiB, 0, Tag::other, "cache.py:7 update");
  builder.alloc(2, 1_MiB, 0, Tag::other, "model.py:42 forward");
  builder.alloc(3, 64_MiB, 0, Tag::other, std::string(TorchRecording::kNoFrame));
  builder.free(4, a);
  builder.free(5, b);
  Recorded r;
  r.scenario.device.capacity = 1_GiB;
  r.scenario.tenants.push_back(TenantSpec{std::make_shared<const Trace>(std::move(builder).finish()), policy_maker("caching"), 0});
  replay(r);
  const json map = data_of(r)["lanes"][0]["map"];
  CHECK(map["colour_by"] == "layer");
  // The layer largest in bytes x lifetime first; the largest of all, with no frame outside
  // torch, stays grey with the rest.
  CHECK(map["palette"] == json::array({0, 1}));
  std::set<int> layers;
  for (const json& block : map["blocks"]) layers.insert(block[4].get<int>());
  CHECK(layers.size() == 3);
  // A model's trace, whose tags tell, stays coloured by tag.
  TraceBuilder model({"model", "test"});
  model.alloc(0, 1_MiB, 0, Tag::weight, "fc");
  model.alloc(1, 1_MiB, 0, Tag::activation, "fc");
  Recorded m;
  m.scenario.device.capacity = 1_GiB;
  m.scenario.tenants.push_back(TenantSpec{std::make_shared<const Trace>(std::move(model).finish()), policy_maker("caching"), 0});
  replay(m);
  CHECK(data_of(m)["lanes"][0]["map"]["colour_by"] == "tag");
}

TEST_CASE("a comparison's charts put every policy on the trace's event index", "[report][compare]") {
  TraceBuilder builder({"steps", "test"});
  std::vector<AllocId> ids;
  for (int i = 0; i < 6; ++i) ids.push_back(builder.alloc(1000 * i, 8_MiB * (i + 1), 0, Tag::activation));
  for (int i = 0; i < 6; ++i) builder.free(10000 + 1000 * i, ids[i]);
  const auto trace = std::make_shared<const Trace>(std::move(builder).finish());
  DeviceSpec device;
  device.capacity = 1_GiB;
  const std::vector<PolicyMaker> policies{policy_maker("direct"), policy_maker("expandable")};
  const Comparison comparison = compare_policies(trace, device, policies, OnOom::stop, true);
  const std::vector<ReportedRun> reported = comparison.reported();
  const json page = json::parse(run_report_data("title", "compare", reported));
  CHECK(page["x_axis"] == "event");
  REQUIRE(page["lanes"].size() == 2);
  // The policies' clocks differ (their allocators' costs), their x of each event does not.
  CHECK(page["lanes"][0]["end_time_ns"] != page["lanes"][1]["end_time_ns"]);
  CHECK(page["lanes"][0]["events_replayed"] == page["lanes"][1]["events_replayed"]);
  std::vector<std::vector<std::size_t>> xs;
  for (const json& lane : page["lanes"]) {
    std::vector<std::size_t>& x = xs.emplace_back();
    for (const json& point : lane["series"]) x.push_back(point[4].get<std::size_t>());
    // A block's x is its events, in the map as in the chart.
    for (const json& block : lane["map"]["blocks"]) CHECK(block[5].get<std::size_t>() < 12);
  }
  CHECK(xs[0] == xs[1]);
  CHECK(xs[0].size() == 12);
  // A lone run keeps its simulated clock.
  CHECK(json::parse(run_report_data("title", "run", {&reported[0], 1}))["x_axis"] == "time");
}

}  // namespace
}  // namespace allocsim
