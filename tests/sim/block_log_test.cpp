// The engine's block and segment calls, recorded by BlockLog: where each block and segment
// was and when, checked by hand on a small trace and as invariants over every policy.
#include <algorithm>
#include <map>

#include <catch2/catch.hpp>

#include "policies/registry.hpp"
#include "sim/block_log.hpp"
#include "sim/engine.hpp"
#include "workloads/random_trace.hpp"

namespace allocsim {
namespace {

Scenario one_tenant(Bytes capacity, std::shared_ptr<const Trace> trace, std::string policy) {
  Scenario scenario;
  scenario.device.capacity = capacity;
  scenario.device.cost = CostModel{0, 0, 0, 0, 1};
  scenario.check = true;
  scenario.tenants.push_back(TenantSpec{std::move(trace), policy_maker(std::move(policy)), 0});
  return scenario;
}

TEST_CASE("the block log places each block where the policy put it, by hand", "[engine][block_log]") {
  // bestfit over one 5 KiB region: a, b, c of 1 KiB at 0, 1K, 2K; a freed; d of 1.5 KiB at 3K.
  TraceBuilder builder({"hand", "test"});
  const AllocId a = builder.alloc(0, 1_KiB);
  builder.alloc(10, 1_KiB);
  builder.alloc(20, 1_KiB);
  builder.free(30, a);
  builder.alloc(40, 1536);
  BlockLog log;
  std::vector<Observer*> observers{&log};
  const RunResult run = allocsim::run(one_tenant(16_KiB, std::make_shared<const Trace>(std::move(builder).finish()),
                                                 "bestfit:region=5KiB"), observers);
  REQUIRE(log.tenants().size() == 1);
  const TenantBlocks& blocks = log.tenants()[0];
  REQUIRE(blocks.segments.size() == 1);
  const SegmentSpan& segment = blocks.segments[0];
  CHECK(segment.bytes == 5_KiB);
  CHECK(segment.reserved_event == 0);
  CHECK(segment.released_event == 5);  // at the tenant's end: events_replayed
  REQUIRE(blocks.blocks.size() == 4);
  const Addr base = segment.addr;
  CHECK(blocks.blocks[0].addr == base);
  CHECK(blocks.blocks[0].placed_event == 0);
  CHECK(blocks.blocks[0].freed_event == 3);
  CHECK(blocks.blocks[0].placed == 0);
  CHECK(blocks.blocks[0].freed == 30);
  CHECK(blocks.blocks[1].addr == base + 1_KiB);
  CHECK(blocks.blocks[2].addr == base + 2_KiB);
  CHECK(blocks.blocks[3].addr == base + 3_KiB);
  CHECK(blocks.blocks[3].size == 1536);
  CHECK(blocks.blocks[3].requested == 1536);
  CHECK(blocks.blocks[3].placed_event == 4);
  for (std::size_t i = 1; i < 4; ++i) CHECK(blocks.blocks[i].freed_event == run.tenants[0].events_replayed);
}

TEST_CASE("the block log stops at its bound and counts the rest", "[engine][block_log]") {
  TraceBuilder builder({"many", "test"});
  for (int i = 0; i < 10; ++i) builder.free(2 * i + 1, builder.alloc(2 * i, 1_KiB));
  BlockLog log(4);
  std::vector<Observer*> observers{&log};
  allocsim::run(one_tenant(1_MiB, std::make_shared<const Trace>(std::move(builder).finish()), "direct"), observers);
  const TenantBlocks& blocks = log.tenants().at(0);
  CHECK(blocks.blocks.size() == 4);
  CHECK(blocks.dropped_blocks == 6);
  CHECK(blocks.segments.size() == 4);
  CHECK(blocks.dropped_segments == 6);
  for (const BlockSpan& block : blocks.blocks) CHECK(block.freed_event == block.placed_event + 1);
}

TEST_CASE("an unmap of part of a mapped range ends that part and keeps the rest", "[engine][block_log]") {
  // expandable maps 200 MiB in one call; after a free, 60 MiB is placed at its start and
  // empty_cache() unmaps the 140 MiB after it.
  TraceBuilder builder({"expandable", "test"});
  builder.free(10, builder.alloc(0, 200_MiB));
  builder.alloc(20, 60_MiB);
  builder.release(30);
  BlockLog log;
  std::vector<Observer*> observers{&log};
  allocsim::run(one_tenant(1_GiB, std::make_shared<const Trace>(std::move(builder).finish()), "expandable"),
                observers);
  const TenantBlocks& blocks = log.tenants().at(0);
  Bytes ended_at_release = 0;
  Bytes mapped_after = 0;
  for (const SegmentSpan& span : blocks.segments) {
    CHECK(span.mapped);
    CHECK(span.reserved_event == 0);
    if (span.released_event == 3) ended_at_release += span.bytes;
    if (span.released_event > 3) mapped_after += span.bytes;
  }
  CHECK(ended_at_release == 140_MiB);
  CHECK(mapped_after == 60_MiB);
}

// Checks, as the calls come, what every observer may rely on.
class Invariants final : public Observer {
 public:
  void on_event(const Sample&) override {}
  void on_block(const BlockEvent& b) override {
    if (b.action == BlockAction::placed) {
      CHECK(b.size >= b.requested);
      for (const auto& [id, live] : live_) CHECK((b.addr + b.size <= live.addr || live.addr + live.size <= b.addr));
      CHECK(live_.emplace(index_of(b.id), b).second);
      if (!segments_.empty()) CHECK(inside_a_segment(b));
      return;
    }
    const auto it = live_.find(index_of(b.id));
    REQUIRE(it != live_.end());
    if (b.action == BlockAction::moved) {
      CHECK(it->second.addr == b.from);
      it->second.addr = b.addr;
      return;
    }
    CHECK(it->second.addr == b.addr);
    CHECK(it->second.size == b.size);
    live_.erase(it);
  }
  void on_segment(const SegmentEvent& s) override {
    if (s.action == SegmentAction::alloc) {
      CHECK(segments_.emplace(s.addr, s.bytes).second);
      ++reserved;
    } else if (s.action == SegmentAction::free) {
      const auto it = segments_.find(s.addr);
      REQUIRE(it != segments_.end());
      CHECK(it->second == s.bytes);
      for (const auto& [id, live] : live_) CHECK((live.addr + live.size <= s.addr || s.addr + s.bytes <= live.addr));
      segments_.erase(it);
    }
  }
  bool balanced() const { return live_.empty() && segments_.empty(); }
  std::size_t reserved = 0;

 private:
  bool inside_a_segment(const BlockEvent& b) const {
    auto it = segments_.upper_bound(b.addr);
    if (it == segments_.begin()) return false;
    --it;
    return b.addr + b.size <= it->first + it->second;
  }
  std::map<std::size_t, BlockEvent> live_;
  std::map<Addr, Bytes> segments_;
};

TEST_CASE("every policy's blocks and segments, as observers see them, are consistent", "[engine][block_log][policies]") {
  RandomTraceOptions options;
  options.events = 4000;
  options.target_live = 24_MiB;
  const auto trace = std::make_shared<const Trace>(make_random_trace(options, "random"));
  for (const PolicyInfo& info : all_policies()) {
    DYNAMIC_SECTION(info.name) {
      Invariants invariants;
      std::vector<Observer*> observers{&invariants};
      Scenario scenario = one_tenant(64_MiB, trace, std::string(info.name));
      scenario.on_oom = OnOom::continue_run;
      const RunResult run = allocsim::run(scenario, observers);
      CHECK(invariants.balanced());
      CHECK(invariants.reserved <= run.tenants[0].device_mallocs);
    }
  }
}

}  // namespace
}  // namespace allocsim
