// PyTorch's caching allocator worked by hand from the reference (allocators.md section 2).
#include <array>
#include <map>
#include <memory>
#include <string>

#include <catch2/catch.hpp>

#include "harness.hpp"
#include "policies/caching.hpp"
#include "sim/error.hpp"
#include "sim/forwarding_device.hpp"
#include "sim/sim_device.hpp"
#include "sim/spec.hpp"

namespace allocsim::test {
namespace {

std::uint64_t extra(Policy& policy, const std::string& name) {
  for (const PolicyStat& stat : policy.inspect(Detail::counters).extra) {
    if (stat.name == name) return stat.value;
  }
  FAIL("no statistic " << name);
  return 0;
}

TEST_CASE("caching rounds to 512 bytes, or to power-of-two divisions above 512 x d", "[caching]") {
  CHECK(torch_round_size(1, 0) == 512);
  CHECK(torch_round_size(511, 0) == 512);
  CHECK(torch_round_size(512, 0) == 512);
  CHECK(torch_round_size(513, 0) == 1024);
  // d = 4: 1200 is not above 512 x 4, so plain 512-rounding (the source comment's 1280 is not what runs).
  CHECK(torch_round_size(1200, 4) == 1536);
  // d = 4, 5,000,000: floor power 4,194,304, step 1,048,576, so 5,242,880.
  CHECK(torch_round_size(5'000'000, 4) == 5'242'880);
  CHECK(torch_round_size(4'194'304, 4) == 4'194'304);  // a power of two stays
  CHECK(torch_round_size(2049, 4) == 2560);            // 2048 < 2049 and step 512: align up to 2560
}

TEST_CASE("caching asks the device for 2 MiB, 20 MiB or the size rounded to 2 MiB", "[caching]") {
  CHECK(torch_allocation_size(512) == 2_MiB);
  CHECK(torch_allocation_size(1_MiB) == 2_MiB);
  CHECK(torch_allocation_size(1_MiB + 512) == 20_MiB);
  CHECK(torch_allocation_size(10_MiB - 512) == 20_MiB);
  CHECK(torch_allocation_size(10_MiB) == 10_MiB);
  CHECK(torch_allocation_size(10_MiB + 512) == 12_MiB);
}

TEST_CASE("caching follows the reference's worked example step by step", "[caching]") {
  Harness harness("caching", plain_device(1_GiB));
  const auto reserved = [&] { return harness.policy().stats().reserved; };
  const auto allocated = [&] { return harness.policy().stats().allocated; };
  const auto a = harness.alloc(1);  // 512 in a new 2 MiB small segment, split
  CHECK(reserved() == 2'097'152);
  CHECK(allocated() == 512);
  const auto b = harness.alloc(1'572'864);  // a 20 MiB segment, split: 19,398,656 left
  CHECK(reserved() == 23'068'672);
  CHECK(allocated() == 1'573'376);
  const auto c = harness.alloc(12'345'678);  // 12,345,856 from b's remainder, split: 7,052,800 left
  CHECK(reserved() == 23'068'672);
  CHECK(allocated() == 13'919'232);
  harness.free(*b);  // its neighbour c is allocated: nothing merges
  CHECK(allocated() == 12'346'368);
  const auto d = harness.alloc(19'922'944);  // a 20 MiB segment; 1 MiB left is not > 1 MiB: whole
  CHECK(d->size == 20'971'520);
  CHECK(reserved() == 44'040'192);
  CHECK(allocated() == 33'317'888);
  const auto e = harness.alloc(12'000'000);  // 12,000,256 in a 12 MiB segment; 582,656 left: whole
  CHECK(e->size == 12'582'912);
  CHECK(reserved() == 56'623'104);
  CHECK(allocated() == 45'900'800);
  REQUIRE((a && c));
  harness.finish();
}

TEST_CASE("caching packs small requests in one 2 MiB segment and splits down to 512 bytes", "[caching]") {
  Harness harness("caching", plain_device(64_MiB));
  const auto a = harness.alloc(1000);  // 1024 in a new 2 MiB segment, the rest cached
  const auto b = harness.alloc(1_MiB);
  REQUIRE((a && b));
  CHECK(a->size == 1024);
  CHECK(b->addr == a->addr + 1024);
  CHECK(harness.policy().stats().reserved == 2_MiB);
  CHECK(harness.device().stats().mallocs == 1);
  // 2 MiB - 1024 - 1 MiB = 1 MiB - 1024 left; a 1 MiB - 1536 request leaves exactly 512: split.
  const auto c = harness.alloc(1_MiB - 1536);
  REQUIRE(c);
  CHECK(c->size == 1_MiB - 1536);
  CHECK(harness.policy().stats().largest_free == 512);
  harness.finish();
}

TEST_CASE("caching splits a large block only when more than 1 MiB would be left", "[caching]") {
  Harness harness("caching", plain_device(64_MiB));
  // 19 MiB in a 20 MiB segment: exactly 1 MiB left, not more: handed out whole.
  const auto whole = harness.alloc(19_MiB);
  REQUIRE(whole);
  CHECK(whole->size == 20_MiB);
  // 19 MiB - 512: 1 MiB + 512 left: split.
  Harness other("caching", plain_device(64_MiB));
  const auto split = other.alloc(19_MiB - 512);
  REQUIRE(split);
  CHECK(split->size == 19_MiB - 512);
  CHECK(other.policy().stats().largest_free == 1_MiB + 512);
  harness.finish();
  other.finish();
}

TEST_CASE("caching keeps segments after a free and reuses them best fit, per stream", "[caching]") {
  Harness harness("caching", plain_device(256_MiB));
  const auto big = harness.alloc(50_MiB);
  REQUIRE(big);
  harness.free(*big);
  CHECK(harness.policy().stats().reserved == 50_MiB);  // never returned on free
  CHECK(harness.alloc(50_MiB, 1)->addr != big->addr);  // another stream does not see it
  const auto again = harness.alloc(50_MiB, 0);
  REQUIRE(again);
  CHECK(again->addr == big->addr);
  CHECK(harness.device().stats().mallocs == 2);
  harness.finish();
}

TEST_CASE("caching frees its cache and retries once before an OOM", "[caching]") {
  Harness harness("caching", plain_device(60_MiB));
  const auto a = harness.alloc(30_MiB);
  REQUIRE(a);
  harness.free(*a);  // 30 MiB cached
  // 40 MiB does not fit the cache nor the 30 MiB left on the device: release, retry, fit.
  const auto b = harness.alloc(40_MiB);
  REQUIRE(b);
  CHECK(extra(harness.policy(), "num_alloc_retries") == 1);
  CHECK(extra(harness.policy(), "num_device_free") == 1);
  CHECK_FALSE(harness.alloc(40_MiB));  // now a real OOM
  CHECK(extra(harness.policy(), "num_ooms") == 1);
  harness.finish();
}

TEST_CASE("caching's OOM path: oversize cached blocks first, largest down, then every unsplit block and a retry",
          "[caching]") {
  Harness harness("caching:max_split_size=40MiB", plain_device(200_MiB));
  const auto o1 = harness.alloc(60_MiB);
  const auto o2 = harness.alloc(50_MiB);
  const auto n = harness.alloc(30_MiB);
  REQUIRE((o1 && o2 && n));
  harness.free(*o1);
  harness.free(*o2);
  harness.free(*n);  // cached: 60 and 50 MiB oversize, 30 MiB not; 60 MiB left on the device
  // 70 MiB: no cached block fits and the device cannot; free oversize blocks from the
  // largest down until 70 MiB are freed (60, then 50), and the device call succeeds
  // without a retry. The 30 MiB block stays cached.
  const auto r = harness.alloc(70_MiB);
  REQUIRE(r);
  CHECK(extra(harness.policy(), "num_alloc_retries") == 0);
  CHECK(extra(harness.policy(), "num_device_free") == 2);
  CHECK(harness.policy().stats().reserved == 100_MiB);
  CHECK(harness.policy().inspect(Detail::counters).releasable == 30_MiB);
  // 120 MiB: no oversize block is cached; release every unsplit block (30 MiB), retry.
  const auto big = harness.alloc(120_MiB);
  REQUIRE(big);
  CHECK(extra(harness.policy(), "num_alloc_retries") == 1);
  CHECK(extra(harness.policy(), "num_device_free") == 3);
  CHECK(harness.policy().stats().reserved == 190_MiB);
  harness.finish();
}

TEST_CASE("caching rebuilds a recorded segment: blocks at their offsets, the gaps cached", "[caching]") {
  SimDevice device(plain_device(64_MiB));
  const std::unique_ptr<Policy> made = make_policy("caching", device);
  Policy& policy = *made;
  const std::unique_ptr<RecordingAdoption> recorded = find_policy("caching").adoption(policy);
  REQUIRE(recorded);
  policy.prepare(ReplaySetup{.allocations = 3});
  const std::array held{RecordingAdoption::HeldBlock{512, 1024, AllocId{0}, 1000},
                        RecordingAdoption::HeldBlock{4096, 512, AllocId{1}, 100}};
  const Addr base = recorded->adopt_segment(2_MiB, 0, true, held).value();
  using Laid = RecordingAdoption::LaidBlock;
  const auto blocks = [&] { return recorded->layout().at(0).blocks; };
  CHECK(blocks() == std::vector<Laid>{{base, 512, false}, {base + 512, 1024, true}, {base + 1536, 2560, false},
                                      {base + 4096, 512, true}, {base + 4608, 2_MiB - 4608, false}});
  CHECK(policy.stats().reserved == 2_MiB);
  CHECK(policy.stats().allocated == 1536);
  policy.check();
  policy.deallocate(Block{base + 512, 1024, 1000, AllocId{0}, 0}, 1);  // merges with both free neighbours
  CHECK(blocks() == std::vector<Laid>{{base, 4096, false}, {base + 4096, 512, true}, {base + 4608, 2_MiB - 4608, false}});
  const auto reused = policy.allocate(Request{AllocId{2}, 4000, 0, 2});  // best fit: the 4096 B gap
  REQUIRE(reused);
  CHECK(reused->addr == base);
  policy.check();
  CHECK_THROWS_AS(recorded->adopt_segment(2_MiB, 0, true, std::array{RecordingAdoption::HeldBlock{100, 512, AllocId{2}, 1}}),
                  Error);  // not 512-B aligned
  CHECK_FALSE(recorded->adopt_segment(64_MiB, 0, false, {}));  // no room left on the device: nothing changes
  CHECK(policy.stats().reserved == 2_MiB);
  policy.check();
}

// A device that checks every free against the segments it gave, as cudaFree would fail.
class StrictDevice final : public ForwardingDevice {
 public:
  using ForwardingDevice::ForwardingDevice;
  std::optional<Segment> malloc(Bytes bytes) override {
    const std::optional<Segment> segment = ForwardingDevice::malloc(bytes);
    if (segment) given_.emplace(segment->addr, segment->bytes);
    return segment;
  }
  void free(Segment segment) override {
    const auto found = given_.find(segment.addr);
    if (found == given_.end() || found->second != segment.bytes) throw Error("free of a segment the device did not give");
    given_.erase(found);
    ForwardingDevice::free(segment);
  }

 private:
  std::map<Addr, Bytes> given_;
};

// A recording made without max_split_size, replayed under max_split_size=64MiB: its adopted
// segments hold free blocks of 64 MiB and more inside partly used segments. The OOM path
// gives back oversize cached blocks, and only a whole segment can go back to the device.
TEST_CASE("caching under max_split_size gives back only whole segments of an adopted start", "[caching]") {
  const auto adopted = [](Bytes capacity) {
    struct Adopted {
      SimDevice sim;
      StrictDevice device;
      std::unique_ptr<Policy> policy;
      std::unique_ptr<RecordingAdoption> view;
      explicit Adopted(Bytes bytes) : sim(plain_device(bytes)), device(sim) {
        policy = make_policy("caching:max_split_size=64MiB", device);
        view = find_policy("caching").adoption(*policy);
        policy->prepare(ReplaySetup{.allocations = 2});
      }
    };
    return std::make_unique<Adopted>(capacity);
  };
  const RecordingAdoption::HeldBlock live_at_100{100_MiB, 20_MiB, AllocId{0}, 20_MiB};
  const RecordingAdoption::HeldBlock live_at_0{0, 20_MiB, AllocId{0}, 20_MiB};
  SECTION("from the largest down, the partial oversize blocks skipped") {
    // 400 MiB: a 200 MiB segment with 20 MiB live at 100 MiB (free 100 and 80 MiB around
    // it), a wholly free 110 MiB one; 90 MiB left on the device. 150 MiB fits no cached
    // block nor the device; of the oversize blocks only the 110 MiB segment is whole: it goes
    // back (110 < 150: not enough), every unsplit block then (none more), and the retry
    // finds 200 MiB free.
    const auto start = adopted(400_MiB);
    Policy& policy = *start->policy;
    REQUIRE(start->view->adopt_segment(200_MiB, 0, false, std::array{live_at_100}));
    REQUIRE(start->view->adopt_segment(110_MiB, 0, false, {}));
    const auto served = policy.allocate(Request{AllocId{1}, 150_MiB, 0, 1});
    REQUIRE(served);
    CHECK(policy.stats().reserved == 350_MiB);
    CHECK(extra(policy, "num_device_free") == 1);
    CHECK(extra(policy, "num_alloc_retries") == 1);
    policy.check();
  }
  SECTION("one large enough: the smallest whole segment, not a partial block") {
    // 430 MiB: a 200 MiB segment with 20 MiB live at its start (180 MiB free after it), a
    // wholly free 190 MiB one; 40 MiB left. 150 MiB does not take the 180 MiB block (it is
    // 20 MiB or more larger: max_non_split_rounding); the first cached block of 150 MiB or
    // more is that partial one, so the 190 MiB segment goes back and the device serves it.
    const auto start = adopted(430_MiB);
    Policy& policy = *start->policy;
    REQUIRE(start->view->adopt_segment(200_MiB, 0, false, std::array{live_at_0}));
    REQUIRE(start->view->adopt_segment(190_MiB, 0, false, {}));
    const auto served = policy.allocate(Request{AllocId{1}, 150_MiB, 0, 1});
    REQUIRE(served);
    CHECK(policy.stats().reserved == 350_MiB);
    CHECK(extra(policy, "num_device_free") == 1);
    CHECK(extra(policy, "num_alloc_retries") == 0);
    policy.check();
  }
  SECTION("no whole segment to give back: an OOM, the start as it was") {
    // 256 MiB: only the 200 MiB segment, 56 MiB left. 120 MiB: its oversize free blocks
    // (100 and 80 MiB) are partial, nothing goes back, and the request is an OOM.
    const auto start = adopted(256_MiB);
    Policy& policy = *start->policy;
    REQUIRE(start->view->adopt_segment(200_MiB, 0, false, std::array{live_at_100}));
    CHECK_FALSE(policy.allocate(Request{AllocId{1}, 120_MiB, 0, 1}).block);
    CHECK(policy.stats().reserved == 200_MiB);
    CHECK(extra(policy, "num_device_free") == 0);
    policy.check();
  }
}

TEST_CASE("caching's max_split_size keeps oversize blocks whole and away from small requests", "[caching]") {
  Harness harness("caching:max_split_size=64MiB", plain_device(512_MiB));
  const auto big = harness.alloc(100_MiB);
  REQUIRE(big);
  harness.free(*big);
  // A 30 MiB request must not take the cached 100 MiB block: it gets its own segment.
  const auto small = harness.alloc(30_MiB);
  REQUIRE(small);
  CHECK(small->addr != big->addr);
  // An oversize request may take a cached block at most 20 MiB larger: 90 MiB can, 79 MiB cannot.
  const auto fits = harness.alloc(90_MiB);
  REQUIRE(fits);
  CHECK(fits->addr == big->addr);
  CHECK(fits->size == 100_MiB);  // oversize blocks are never split
  harness.free(*fits);
  const auto too_small = harness.alloc(79_MiB);
  REQUIRE(too_small);
  CHECK(too_small->addr != big->addr);
  harness.finish();
}

TEST_CASE("caching's fraction caps reserved bytes without a device call", "[caching]") {
  Harness harness("caching:fraction=0.5", plain_device(100_MiB));
  REQUIRE(harness.alloc(40_MiB));
  CHECK_FALSE(harness.alloc(12_MiB));  // 40 + 12 > 50 MiB
  CHECK(harness.device().stats().failed_mallocs == 0);
  CHECK(harness.policy().stats().limit == 50_MiB);
  harness.finish();
}

TEST_CASE("caching's empty_cache returns every unsplit cached segment", "[caching]") {
  Harness harness("caching", plain_device(256_MiB));
  const auto a = harness.alloc(30_MiB);
  const auto b = harness.alloc(100);
  const auto c = harness.alloc(200);
  REQUIRE((a && b && c));
  harness.free(*a);
  harness.free(*b);  // the small segment is still split: c lives in it
  harness.policy().release_cached();
  CHECK(harness.policy().stats().reserved == 2_MiB);
  harness.finish();
}

}  // namespace
}  // namespace allocsim::test

namespace allocsim::test {
namespace {

TEST_CASE("caching reads roundup_power2_divisions as one number or PyTorch's list", "[caching]") {
  RoundupDivisions all_four{};
  all_four.fill(4);
  CHECK(parse_roundup_divisions("4") == all_four);
  // Keys are MB: 256 MB is interval 8. The first key also fills every interval below it;
  // '>' fills the intervals after the last one set.
  const RoundupDivisions list = parse_roundup_divisions("[256:1,512:2,>:4]");
  CHECK(list[0] == 1);
  CHECK(list[8] == 1);
  CHECK(list[9] == 2);
  CHECK(list[10] == 4);
  CHECK(list[15] == 4);
  // PyTorch's own test: [..., 1024:4, >:1] keeps 4 at 1024 MB.
  const RoundupDivisions tail = parse_roundup_divisions("[1024:4,>:1]");
  CHECK(tail[10] == 4);
  CHECK(tail[11] == 1);
  CHECK_THROWS_WITH(parse_roundup_divisions("3"), Catch::Contains("power of two"));
  CHECK_THROWS_WITH(parse_roundup_divisions("[256:1"), Catch::Contains("ends with ']'"));
  // The interval follows the size: 5,000,000 B is in [4, 8) MiB, interval 2.
  RoundupDivisions only_interval_2{};
  only_interval_2[2] = 4;
  CHECK(torch_round_size(5'000'000, only_interval_2) == 5'242'880);
  CHECK(torch_round_size(3'000'000, only_interval_2) == align_up(3'000'000, 512));
}

TEST_CASE("caching's rounding is torch_round_size with its divisions, whichever way it is computed", "[caching]") {
  // Without divisions (0 or 1 everywhere) the policy skips the interval lookup: the same sizes.
  const auto spec = GENERATE(as<std::string>{}, "caching", "caching:roundup_power2_divisions=1",
                             "caching:roundup_power2_divisions=4",
                             "caching:roundup_power2_divisions=[256:1,512:2,>:4]",
                             "caching:conf=roundup_power2_divisions:8");
  SimDevice device(plain_device(1_GiB));
  const auto policy = make_policy(spec, device);
  const auto* caching = dynamic_cast<const CachingPolicy*>(policy.get());
  REQUIRE(caching != nullptr);
  const RoundupDivisions divisions =
      spec == "caching" || spec.ends_with("=1") ? RoundupDivisions{}
      : spec.ends_with("=4")                    ? parse_roundup_divisions("4")
      : spec.ends_with("]")                     ? parse_roundup_divisions("[256:1,512:2,>:4]")
                                                : parse_roundup_divisions("8");
  CHECK(policy->rounded_size(0) == 0);
  for (Bytes power = 1; power <= 64_GiB; power *= 2) {
    for (const Bytes size : {power - 1, power, power + 1, power + power / 3}) {
      if (size == 0) continue;
      INFO(spec << ", " << size << " B");
      CHECK(policy->rounded_size(size) == torch_round_size(size, divisions));
    }
  }
}

TEST_CASE("caching takes a PYTORCH_CUDA_ALLOC_CONF string, entries joined by '+'", "[caching]") {
  Harness conf("caching:conf=max_split_size_mb:64+roundup_power2_divisions:4", plain_device(512_MiB));
  const auto rounded = conf.alloc(5'000'000);
  REQUIRE(rounded);
  CHECK(rounded->size == 5'242'880);  // the division rounding, then a split 20 MiB segment
  const auto big = conf.alloc(100_MiB);
  REQUIRE(big);
  conf.free(*big);
  CHECK(conf.alloc(30_MiB)->addr != big->addr);  // max_split_size took effect
  conf.finish();

  Harness listed("caching:roundup_power2_divisions=[1:4,>:4],fraction=0.5", plain_device(512_MiB));
  CHECK(listed.alloc(5'000'000)->size == 5'242'880);  // commas inside [...] belong to the list
  listed.finish();

  SimDevice device(plain_device(1_GiB));
  // The conf is read by the one table of PyTorch's keys (torch_alloc_conf), in its words.
  CHECK_THROWS_WITH(make_policy("caching:conf=expandable_segments:yes", device), Catch::Contains("PyTorch takes True or False"));
  CHECK_THROWS_WITH(make_policy("caching:conf=backend:cudaMallocAsync", device), Catch::Contains("not modelled"));
  CHECK_THROWS_WITH(make_policy("caching:conf=max_split_size_mb:19", device), Catch::Contains("20 or more"));
  CHECK_THROWS_WITH(make_policy("caching:conf=max_split_size:128", device),
                    Catch::Contains("'max_split_size' is not a key of PYTORCH_CUDA_ALLOC_CONF"));
  CHECK_NOTHROW(make_policy("caching:conf=pinned_use_background_threads:True+backend:native", device));
  CHECK_THROWS_WITH(make_policy("caching:conf=max_split_size_mb", device), Catch::Contains("not key:value"));
}

TEST_CASE("expandable maps 20 MiB pages on demand and unmaps the whole pages of free blocks", "[caching][expandable]") {
  // 160 MiB device: each pool may reserve 1.125 x 160 = 180 MiB of address space (9 pages).
  Harness harness("expandable", plain_device(160_MiB));
  Policy& policy = harness.policy();
  const auto a = harness.alloc(5_MiB);  // maps page 0; the 15 MiB after a stays free, mapped
  REQUIRE(a);
  CHECK(policy.stats().reserved == 20_MiB);
  CHECK(harness.device().stats().mallocs == 1);
  // 30 MiB: no free block is that large, but the free 15 MiB after a plus the unmapped
  // space after it is: map one more page (20 MiB) and merge it with those 15 MiB.
  const auto b = harness.alloc(30_MiB);
  REQUIRE(b);
  CHECK(b->addr == a->addr + 5_MiB);
  CHECK(policy.stats().reserved == 40_MiB);
  CHECK(extra(policy, "num_device_alloc") == 2);
  harness.free(*b);  // free: [5, 40) MiB
  policy.release_cached();  // only page 1 ([20, 40)) lies wholly inside the free block
  CHECK(policy.stats().reserved == 20_MiB);
  CHECK(extra(policy, "num_device_free") == 1);
  const std::unique_ptr<RecordingAdoption> caching = find_policy("expandable").adoption(policy);
  REQUIRE(caching->layout().size() == 1);
  CHECK(caching->layout()[0].blocks ==
        std::vector<RecordingAdoption::LaidBlock>{{a->addr, 5_MiB, true}, {a->addr + 5_MiB, 15_MiB, false}});
  harness.free(*a);
  policy.release_cached();  // page 0 goes too; the address space is given up
  CHECK(policy.stats().reserved == 0);
  CHECK(extra(policy, "segment.all.current") == 0);
  CHECK(harness.device().stats().frees == 2);
  harness.finish();
}

TEST_CASE("expandable creates each page as physical memory and pays one map and one unmap per block",
          "[caching][expandable][vmm]") {
  Harness harness("expandable", plain_device(160_MiB));
  const CostModel& cost = harness.device().spec().cost;
  const auto a = harness.alloc(45_MiB);  // three 20 MiB pages, created one by one, mapped in one call
  REQUIRE(a);
  CHECK(harness.device().stats().physical.current == 60_MiB);
  CHECK(harness.device().stats().mallocs == 3);
  CHECK(harness.device().stats().maps == 1);
  CHECK(harness.device().elapsed() == 3 * cost.malloc_cost(20_MiB) + cost.map_cost(60_MiB));
  harness.free(*a);
  const Nanos before = harness.device().elapsed();
  harness.policy().release_cached();  // every page is wholly free: one unmap, three releases
  CHECK(harness.device().stats().unmaps == 1);
  CHECK(harness.device().elapsed() - before == cost.unmap_cost(60_MiB) + 3 * cost.free_cost(20_MiB));
  CHECK(harness.device().stats().physical.current == 0);
  harness.finish();
}

TEST_CASE("expandable splits by the 512-byte rule in every pool", "[caching][expandable]") {
  // 19.5 MiB: natively a 20 MiB segment and no split (1 MiB or less is left); expandable
  // maps one 20 MiB page and splits the 512 KiB off.
  Harness native("caching", plain_device(1_GiB));
  CHECK(native.alloc(19_MiB + 512_KiB)->size == 20_MiB);
  native.finish();
  Harness expandable("expandable", plain_device(1_GiB));
  CHECK(expandable.alloc(19_MiB + 512_KiB)->size == 19_MiB + 512_KiB);
  const auto small = expandable.alloc(4096);  // the small pool maps 2 MiB pages
  REQUIRE(small);
  CHECK(expandable.policy().stats().reserved == 22_MiB);
  expandable.finish();
  Harness conf("caching:conf=expandable_segments:True", plain_device(1_GiB));
  CHECK(conf.alloc(19_MiB + 512_KiB)->size == 19_MiB + 512_KiB);
  conf.finish();
}

TEST_CASE("expandable fails when a page cannot be mapped, after releasing and retrying", "[caching][expandable]") {
  Harness harness("expandable", plain_device(50_MiB));  // room for two 20 MiB pages
  const auto a = harness.alloc(30_MiB);
  REQUIRE(a);
  CHECK(harness.policy().stats().reserved == 40_MiB);
  CHECK_FALSE(harness.alloc(15_MiB));  // needs a third page: 10 MiB free on the device
  CHECK(extra(harness.policy(), "num_alloc_retries") == 1);
  CHECK(extra(harness.policy(), "num_ooms") == 1);
  CHECK(harness.policy().stats().reserved == 40_MiB);  // the failed call mapped nothing
  harness.finish();
}

}  // namespace
}  // namespace allocsim::test
