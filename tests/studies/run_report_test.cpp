// The data of a run's HTML page: the free blocks at an OOM worked out from where the blocks
// were, the memory map's cap, every tenant a lane.
#include <algorithm>
#include <set>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "policies/registry.hpp"
#include "studies/run_report.hpp"

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
  r.result = run(r.scenario, make_policy, observers);
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
  r.scenario.tenants.push_back(TenantSpec{std::make_shared<const Trace>(std::move(builder).finish()), "bfc", 0});
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
  CHECK(lane["verdict"].get<std::string>().find("does not fit (fragmentation)") != std::string::npos);
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
  r.scenario.tenants.push_back(TenantSpec{std::make_shared<const Trace>(std::move(builder).finish()), "direct", 0});
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
  r.scenario.tenants.push_back(TenantSpec{std::make_shared<const Trace>(std::move(a).finish()), "direct", 0});
  r.scenario.tenants.push_back(TenantSpec{std::make_shared<const Trace>(std::move(b).finish()), "bestfit", 0});
  replay(r);
  const json page = data_of(r);
  REQUIRE(page["lanes"].size() == 2);
  CHECK(page["lanes"][0]["label"] == "tenant 0: direct");
  CHECK(page["lanes"][1]["label"] == "tenant 1: bestfit");
  CHECK(page["lanes"][1]["peak"]["layers"][0] == json::array({"fc", 8_KiB}));
  CHECK(page["lanes"][0]["peak"]["by_tag"][0] == json::array({"weight", 4_KiB}));
  CHECK(!page["lanes"][0]["series"].empty());
  CHECK(page["lanes"][1]["map"]["layers"] == json::array({"fc"}));
  CHECK(page["runs"][0]["capacity"] == 1_MiB);
}

}  // namespace
}  // namespace allocsim
