// bfc worked on paper from the reference (shared/reference/allocators.md §1). Every
// expected figure below is derived by hand in the comment beside it; the float32 backpedal
// values were computed with float32 emulation (Python struct.pack('f')) and are written as
// literals. Notation: R = the request rounded up to 256 B, S = the free chunk's size,
// "target" = curr_region_allocation_bytes_, "available" = align_down(limit - pool, 256).
// Split rule (§1.5): split iff S >= 2R or S - R >= threshold (128 MiB by default).
#include <algorithm>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <catch2/catch.hpp>

#include "harness.hpp"
#include "policies/bfc.hpp"
#include "policies/registry.hpp"
#include "sim/engine.hpp"
#include "sim/trace.hpp"

namespace allocsim::test {
namespace {

// A device that refuses every malloc above `max_single` bytes (and any beyond its
// capacity), and records the size of every call, refused or not.
class CappedDevice final : public Device {
 public:
  CappedDevice(Bytes max_single, Bytes capacity = Bytes{1} << 40) : max_single_(max_single), capacity_(capacity) {}

  std::optional<Segment> malloc(Bytes bytes) override {
    attempts.push_back(bytes);
    if (bytes > max_single_ || bytes > capacity_ - used_) {
      ++refused;
      return std::nullopt;
    }
    ++mallocs;
    used_ += bytes;
    const Segment segment{next_addr_, bytes};
    next_addr_ += align_up(bytes, kSegmentAlignment);
    return segment;
  }
  void free(Segment segment) override {
    ++frees;
    used_ -= segment.bytes;
  }
  void copy(Addr, Addr, Bytes) override {}
  Bytes capacity() const override { return capacity_; }
  Bytes used() const override { return used_; }
  Bytes granularity() const override { return 1; }
  Nanos elapsed() const override { return 0; }
  int compute_capability() const override { return 90; }

  std::vector<Bytes> attempts;
  std::uint64_t mallocs = 0;
  std::uint64_t refused = 0;
  std::uint64_t frees = 0;

 private:
  Bytes max_single_;
  Bytes capacity_;
  Bytes used_ = 0;
  Addr next_addr_ = 1_GiB;
};

// A policy on a CappedDevice, driven request by request (the Harness owns a SimDevice).
class Driver {
 public:
  Driver(const std::string& spec, Bytes max_single) : device(max_single), policy(make_policy(spec, device)) {}

  std::optional<Block> alloc(Bytes bytes) {
    const auto id = static_cast<AllocId>(next_id_++);
    const Allocation block = policy->allocate(Request{id, bytes, 0, now_++});
    last_hang_ = block.hang;
    if (block) {
      REQUIRE(block->size >= bytes);
      REQUIRE(block->addr % kBlockAlignment == 0);
      live_.push_back(*block);
    }
    policy->check();
    return block.block;
  }

  // Why the last request would never have returned ("" when it did).
  const std::string& last_hang() const { return last_hang_; }

  // Frees everything, empties the cache, destroys the policy: the device must be empty.
  void finish() {
    for (const Block& block : live_) policy->deallocate(block, now_++);
    live_.clear();
    policy->release_cached();
    policy.reset();
    REQUIRE(device.used() == 0);
  }

  CappedDevice device;
  std::unique_ptr<Policy> policy;

 private:
  std::vector<Block> live_;
  std::string last_hang_;
  std::uint32_t next_id_ = 0;
  Nanos now_ = 0;
};

std::uint64_t extra_stat(const Policy& policy, std::string_view name) {
  for (const PolicyStat& stat : policy.inspect(Detail::counters).extra) {
    if (stat.name == name) return stat.value;
  }
  FAIL("no extra stat named " << name);
  return 0;
}

std::shared_ptr<const Trace> share(TraceBuilder&& builder) {
  return std::make_shared<const Trace>(std::move(builder).finish());
}

std::string bytes_arg(Bytes bytes) { return std::to_string(bytes); }

// Preallocates one region (the policy must be a preallocating spec with an exact limit),
// leaves a free chunk of exactly `hole` bytes at its base, held apart from the free tail
// by a 256 B guard block, and then asks for `request`. The caller picks sizes so that the
// hole is the smallest free chunk that fits (the tail is larger than the hole). Returns
// the block, which must start at the region's base.
Block alloc_from_hole(Harness& harness, Bytes hole, Bytes request) {
  const auto first = harness.alloc(hole);  // split off the low end of the fresh region
  REQUIRE(first);
  REQUIRE(first->size == hole);
  const auto guard = harness.alloc(256);
  REQUIRE(guard);
  REQUIRE(guard->addr == first->addr + hole);
  harness.free(*first);  // the guard is in use: no merge, a free chunk of exactly `hole`
  const auto block = harness.alloc(request);
  REQUIRE(block);
  CHECK(block->addr == first->addr);
  return *block;
}

// ---------------------------------------------------------------------------------------
// §1.13: the worked example, step by step.

TEST_CASE("bfc reproduces the reference's worked example step by step", "[bfc]") {
  Harness h("bfc:growth=true,limit=10GiB", plain_device(16_GiB));
  CHECK(h.policy().stats().limit == 10_GiB);
  CHECK(h.policy().stats().reserved == 0);

  // (a) 1000 B: R = 1024. No chunks: Extend with target 2 MiB >= R (not increased),
  // region 2 MiB, target -> 4 MiB. Split (2 MiB >= 2048): in use 1024.
  const auto a = h.alloc(1000);
  REQUIRE(a);
  CHECK(a->size == 1024);
  CHECK(h.policy().stats().reserved == 2_MiB);
  CHECK(h.policy().stats().allocated == 1024);
  CHECK(h.policy().stats().largest_free == 2_MiB - 1024);
  CHECK(h.device().stats().mallocs == 1);

  // (b) 3 MiB: no free chunk >= 3 MiB. Extend: target 4 MiB fits, region 4 MiB, target ->
  // 8 MiB. Split? 4 < 6 and 4 - 3 = 1 MiB < 128 MiB: no, the whole 4 MiB is in use.
  const auto b = h.alloc(3_MiB);
  REQUIRE(b);
  CHECK(b->size == 4_MiB);
  CHECK(h.policy().stats().reserved == 6_MiB);
  CHECK(h.policy().stats().allocated == 4_MiB + 1024);
  CHECK(h.device().stats().mallocs == 2);

  // (c) 100 MiB: target 8 -> 16 -> 32 -> 64 -> 128 MiB (increased); region 128 MiB; the
  // target stays 128 MiB. No split: 128 < 200 and 28 < 128.
  const auto c = h.alloc(100_MiB);
  REQUIRE(c);
  CHECK(c->size == 128_MiB);
  CHECK(h.policy().stats().reserved == 134_MiB);
  CHECK(h.policy().stats().allocated == 132_MiB + 1024);
  CHECK(h.device().stats().mallocs == 3);

  // (d) 1 KiB: the smallest free chunk >= 1024 is (a)'s remainder, 2 MiB - 1024 at
  // a + 1024; split (>= 2048), the low end used. No new region.
  const auto d = h.alloc(1_KiB);
  REQUIRE(d);
  CHECK(d->addr == a->addr + 1024);
  CHECK(d->size == 1024);
  CHECK(h.policy().stats().reserved == 134_MiB);
  CHECK(h.policy().stats().allocated == 132_MiB + 2048);
  CHECK(h.policy().stats().largest_free == 2_MiB - 2048);
  CHECK(h.device().stats().mallocs == 3);

  // (e) beyond the table: 2 MiB does not fit the 2 MiB - 2048 chunk. The target stayed
  // 128 MiB after (c)'s bump, so the region is 128 MiB (not 256); split (128 >= 4).
  const auto e = h.alloc(2_MiB);
  REQUIRE(e);
  CHECK(e->size == 2_MiB);
  CHECK(h.policy().stats().reserved == 262_MiB);
  CHECK(h.policy().stats().largest_free == 126_MiB);
  CHECK(h.device().stats().mallocs == 4);
  h.finish();
}

// ---------------------------------------------------------------------------------------
// §1.3 rounding, §1.2 bins.

TEST_CASE("bfc rounds every request up to 256 bytes and carves from the low end", "[bfc]") {
  Harness h("growth", plain_device(16_GiB));
  // One 2 MiB region; each request is split off the low end of what is left.
  const auto a = h.alloc(255);  // R = 256
  const auto b = h.alloc(256);  // R = 256
  const auto c = h.alloc(257);  // R = 512
  const auto d = h.alloc(1);    // R = 256
  REQUIRE((a && b && c && d));
  CHECK(a->size == 256);
  CHECK(b->size == 256);
  CHECK(c->size == 512);
  CHECK(d->size == 256);
  CHECK(b->addr == a->addr + 256);
  CHECK(c->addr == a->addr + 512);
  CHECK(d->addr == a->addr + 1024);
  CHECK(h.policy().stats().allocated == 1280);
  CHECK(h.policy().stats().reserved == 2_MiB);
  h.finish();
}

TEST_CASE("bfc serves a zero-byte request with an empty block, not an OOM and no region", "[bfc]") {
  // §1.3: 0 bytes returns nullptr before anything else: no Extend, no count.
  Harness h("growth", plain_device(16_GiB));
  const auto zero = h.alloc(0);
  REQUIRE(zero);
  CHECK(zero->size == 0);
  CHECK(h.policy().stats().reserved == 0);
  CHECK(h.policy().stats().allocated == 0);
  CHECK(h.device().stats().mallocs == 0);
  CHECK(extra_stat(h.policy(), "num_allocs") == 0);
  h.finish();
}

TEST_CASE("bfc files sizes into bins of 256 << b, the last bin unbounded", "[bfc]") {
  // BinNumForSize: b = min(20, floor(log2(max(bytes, 256) >> 8))).
  for (std::size_t b = 0; b <= 20; ++b) {
    const Bytes edge = Bytes{256} << b;
    INFO("bin " << b << ", edge " << edge);
    CHECK(bfc_bin_for(edge) == b);                         // 256 * 2^b opens bin b
    CHECK(bfc_bin_for(edge + 256) == (b == 0 ? 1 : b));    // 512 is bin 1's edge itself
    if (b > 0) CHECK(bfc_bin_for(edge - 256) == b - 1);    // one step below: still bin b-1
  }
  // Bin 19 is [128 MiB, 256 MiB); bin 20 is everything from 256 MiB up.
  CHECK(bfc_bin_for(256_MiB - 256) == 19);
  CHECK(bfc_bin_for(256_MiB) == 20);
  CHECK(bfc_bin_for(512_MiB - 256) == 20);
  CHECK(bfc_bin_for(512_MiB) == 20);
  CHECK(bfc_bin_for(80_GiB) == 20);
  CHECK(bfc_bin_for(Bytes{1} << 40) == 20);
  // Inside a bin: 768 is in bin 1 = [512, 1024); 1536 in bin 2 = [1024, 2048).
  CHECK(bfc_bin_for(768) == 1);
  CHECK(bfc_bin_for(1536) == 2);
}

// ---------------------------------------------------------------------------------------
// §1.4 FindChunkPtr, §1.7 coalescing.

TEST_CASE("bfc takes the smallest free chunk that fits, the lowest address among equals", "[bfc]") {
  // One preallocated 1 MiB region. Layout (offsets from the base):
  //   A 1024 @0 | g @1024 | B 1536 @1280 | g @2816 | C 1024 @3072 | g @4096 | D 2048 @4352 | g @6400 | tail @6656
  Harness h("bfc:limit=1MiB", plain_device(16_GiB));
  const auto a = h.alloc(1024);
  const auto g1 = h.alloc(256);
  const auto b = h.alloc(1536);
  const auto g2 = h.alloc(256);
  const auto c = h.alloc(1024);
  const auto g3 = h.alloc(256);
  const auto d = h.alloc(2048);
  const auto g4 = h.alloc(256);
  REQUIRE((a && g1 && b && g2 && c && g3 && d && g4));
  const Addr base = a->addr;
  REQUIRE(b->addr == base + 1280);
  REQUIRE(c->addr == base + 3072);
  REQUIRE(d->addr == base + 4352);
  CHECK(h.policy().stats().reserved == 1_MiB);
  h.free(*a);
  h.free(*b);
  h.free(*c);
  h.free(*d);  // free: 1024 @0, 1536 @1280, 1024 @3072, 2048 @4352, tail 1 MiB - 6656

  // 768 -> R 768: the 1024 chunks are the smallest that fit; @0 beats @3072. Not split
  // (1024 < 1536, 256 < 128 MiB): the whole 1024.
  const auto e = h.alloc(768);
  REQUIRE(e);
  CHECK(e->addr == base);
  CHECK(e->size == 1024);
  // 1100 -> R 1280: bin 2 = [1024, 2048) holds 1024 @3072 (too small) and 1536 @1280.
  // 1536 < 2560 and 256 < 128 MiB: not split.
  const auto f = h.alloc(1100);
  REQUIRE(f);
  CHECK(f->addr == base + 1280);
  CHECK(f->size == 1536);
  // 1024: the 1024 @3072, exactly.
  const auto g = h.alloc(1024);
  REQUIRE(g);
  CHECK(g->addr == base + 3072);
  CHECK(g->size == 1024);
  // 1024: the 2048 @4352; 2048 >= 2 * 1024: split, low end used, 1024 @5376 left.
  const auto i = h.alloc(1024);
  REQUIRE(i);
  CHECK(i->addr == base + 4352);
  CHECK(i->size == 1024);
  const auto j = h.alloc(1024);
  REQUIRE(j);
  CHECK(j->addr == base + 5376);
  CHECK(j->size == 1024);
  CHECK(h.device().stats().mallocs == 1);
  h.finish();
}

TEST_CASE("bfc merges a freed chunk with free neighbours in its region", "[bfc]") {
  Harness h("bfc:limit=1MiB", plain_device(16_GiB));
  const auto a = h.alloc(1_KiB);
  const auto b = h.alloc(1_KiB);
  const auto c = h.alloc(1_KiB);
  REQUIRE((a && b && c));
  h.free(*a);  // free: [0, 1K) and the tail [3K, 1M)
  CHECK(h.policy().stats().largest_free == 1_MiB - 3_KiB);
  h.free(*c);  // merges with the tail: [2K, 1M)
  CHECK(h.policy().stats().largest_free == 1_MiB - 2_KiB);
  CHECK(h.policy().inspect(Detail::counters).releasable == 0);
  h.free(*b);  // merges with both: the whole region
  CHECK(h.policy().stats().largest_free == 1_MiB);
  CHECK(h.policy().inspect(Detail::counters).releasable == 1_MiB);
  const auto whole = h.alloc(1_MiB);
  REQUIRE(whole);
  CHECK(whole->addr == a->addr);
  CHECK(whole->size == 1_MiB);
  CHECK(h.device().stats().mallocs == 1);
  h.finish();
}

TEST_CASE("bfc never merges chunks of two regions, even adjacent ones", "[bfc]") {
  Harness h("growth", plain_device(16_GiB));
  const auto a = h.alloc(2_MiB);  // region 1: 2 MiB, target -> 4 MiB
  const auto b = h.alloc(4_MiB);  // region 2: 4 MiB, target -> 8 MiB
  REQUIRE((a && b));
  h.free(*a);
  h.free(*b);
  // Two free chunks of 2 and 4 MiB, never one of 6 MiB (DeviceMemAllocator does not
  // coalesce regions, §1.2), whatever the device's addresses.
  CHECK(h.policy().stats().largest_free == 4_MiB);
  CHECK(h.policy().inspect(Detail::counters).releasable == 6_MiB);
  // 5 MiB fits neither: a third region of the 8 MiB target; 8 < 10 and 3 < 128: unsplit.
  const auto c = h.alloc(5_MiB);
  REQUIRE(c);
  CHECK(c->size == 8_MiB);
  CHECK(h.policy().stats().reserved == 14_MiB);
  CHECK(h.device().stats().mallocs == 3);
  h.finish();
}

// ---------------------------------------------------------------------------------------
// §1.5 the split rule at its two edges.

TEST_CASE("bfc splits a chunk of exactly twice the request, not one 256 bytes smaller", "[bfc]") {
  // One preallocated 1 MiB region (limit=1MiB): a hole of S at the base, R = 4096, far
  // under the 128 MiB threshold, so only S >= 2R = 8192 decides.
  SECTION("S = 2R - 256 = 7936: not split, the whole chunk is in use") {
    Harness h("bfc:limit=1MiB", plain_device(16_GiB));
    const Block block = alloc_from_hole(h, 7936, 4096);
    CHECK(block.size == 7936);
    CHECK(h.policy().stats().allocated == 7936 + 256);  // + the guard
    h.finish();
  }
  SECTION("S = 2R = 8192: split, R in use and R left free just above it") {
    Harness h("bfc:limit=1MiB", plain_device(16_GiB));
    const Block block = alloc_from_hole(h, 8192, 4096);
    CHECK(block.size == 4096);
    CHECK(h.policy().stats().allocated == 4096 + 256);
    const auto rest = h.alloc(4096);  // the 4096 remainder is now the best fit
    REQUIRE(rest);
    CHECK(rest->addr == block.addr + 4096);
    CHECK(rest->size == 4096);
    h.finish();
  }
  SECTION("S = 2R + 256 = 8448: split") {
    Harness h("bfc:limit=1MiB", plain_device(16_GiB));
    const Block block = alloc_from_hole(h, 8448, 4096);
    CHECK(block.size == 4096);
    h.finish();
  }
  SECTION("the request is compared rounded: 3841 B is R = 4096 too") {
    Harness h("bfc:limit=1MiB", plain_device(16_GiB));
    const Block block = alloc_from_hole(h, 8192, 3841);  // 8192 >= 2 * 4096: split
    CHECK(block.size == 4096);
    h.finish();
  }
}

TEST_CASE("bfc splits when the excess reaches 128 MiB, not 256 bytes short of it", "[bfc]") {
  // One preallocated 1 GiB region. R = 256 MiB, so 2R = 512 MiB exceeds every S below
  // and only S - R >= 128 MiB can split. The tail (1 GiB - S - 256 > 600 MiB) is larger
  // than the hole, so the hole is the best fit. The first allocation of S splits off the
  // fresh region because 1 GiB >= 2S.
  SECTION("S - R = 128 MiB - 256: not split") {
    Harness h("bfc:limit=1GiB", plain_device(16_GiB));
    const Block block = alloc_from_hole(h, 384_MiB - 256, 256_MiB);
    CHECK(block.size == 384_MiB - 256);
    h.finish();
  }
  SECTION("S - R = 128 MiB: split, the 128 MiB remainder free") {
    Harness h("bfc:limit=1GiB", plain_device(16_GiB));
    const Block block = alloc_from_hole(h, 384_MiB, 256_MiB);
    CHECK(block.size == 256_MiB);
    const auto rest = h.alloc(128_MiB);
    REQUIRE(rest);
    CHECK(rest->addr == block.addr + 256_MiB);
    CHECK(rest->size == 128_MiB);
    h.finish();
  }
  SECTION("S - R = 128 MiB + 256: split") {
    Harness h("bfc:limit=1GiB", plain_device(16_GiB));
    const Block block = alloc_from_hole(h, 384_MiB + 256, 256_MiB);
    CHECK(block.size == 256_MiB);
    h.finish();
  }
}

TEST_CASE("bfc's frag_fraction replaces the 128 MiB threshold by fraction x limit", "[bfc]") {
  // limit 1 GiB. frag_fraction 0.0625: threshold = (int64)(0.0625 * 2^30) = 64 MiB.
  // R = 256 MiB again (2R = 512 MiB > every S here).
  SECTION("0.0625: S - R = 64 MiB - 256 is not split") {
    Harness h("bfc:limit=1GiB,frag_fraction=0.0625", plain_device(16_GiB));
    const Block block = alloc_from_hole(h, 320_MiB - 256, 256_MiB);
    CHECK(block.size == 320_MiB - 256);
    h.finish();
  }
  SECTION("0.0625: S - R = 64 MiB is split (by default it would not be: 64 < 128)") {
    Harness h("bfc:limit=1GiB,frag_fraction=0.0625", plain_device(16_GiB));
    const Block block = alloc_from_hole(h, 320_MiB, 256_MiB);
    CHECK(block.size == 256_MiB);
    h.finish();
  }
  SECTION("the default splits S - R = 64 MiB? no: 64 MiB < 128 MiB") {
    Harness h("bfc:limit=1GiB", plain_device(16_GiB));
    const Block block = alloc_from_hole(h, 320_MiB, 256_MiB);
    CHECK(block.size == 320_MiB);
    h.finish();
  }
  SECTION("0.25: threshold 256 MiB, so S - R = 128 MiB is no longer split") {
    // The first allocation of 384 MiB still splits off the region: 1 GiB >= 768 MiB.
    Harness h("bfc:limit=1GiB,frag_fraction=0.25", plain_device(16_GiB));
    const Block block = alloc_from_hole(h, 384_MiB, 256_MiB);
    CHECK(block.size == 384_MiB);
    h.finish();
  }
}

// ---------------------------------------------------------------------------------------
// §1.6 Extend: growth, the bump, the cap by the limit, preallocation.

TEST_CASE("bfc growth doubles regions from 2 MiB, and a bumped target is not doubled after", "[bfc]") {
  // Limit auto on a plain 16 GiB sm_90 device: 16384 - 1800 = 14584 MiB, never reached.
  Harness h("growth", plain_device(16_GiB));
  // R equal to the target is not an increase: region = target, then target doubles.
  const auto a = h.alloc(2_MiB);  // region 2 MiB, target -> 4
  REQUIRE(a);
  CHECK(a->size == 2_MiB);
  CHECK(h.policy().stats().reserved == 2_MiB);
  const auto b = h.alloc(4_MiB);  // region 4 MiB, target -> 8
  REQUIRE(b);
  CHECK(h.policy().stats().reserved == 6_MiB);
  const auto c = h.alloc(8_MiB);  // region 8 MiB, target -> 16
  REQUIRE(c);
  CHECK(h.policy().stats().reserved == 14_MiB);
  // 40 MiB > 16: target 16 -> 32 -> 64 (increased); region 64 MiB; the target stays 64.
  // 64 < 80 and 24 < 128: not split.
  const auto d = h.alloc(40_MiB);
  REQUIRE(d);
  CHECK(d->size == 64_MiB);
  CHECK(h.policy().stats().reserved == 78_MiB);
  // 1 MiB: every chunk so far is in use whole, so Extend: region 64 MiB (not 128), split;
  // now the target doubles to 128.
  const auto e = h.alloc(1_MiB);
  REQUIRE(e);
  CHECK(e->size == 1_MiB);
  CHECK(h.policy().stats().reserved == 142_MiB);
  // 100 MiB > the 63 MiB free: region 128 MiB (target 128 >= 100, no bump), target -> 256;
  // 128 < 200 and 28 < 128: unsplit.
  const auto f = h.alloc(100_MiB);
  REQUIRE(f);
  CHECK(f->size == 128_MiB);
  CHECK(h.policy().stats().reserved == 270_MiB);
  // 64 MiB > 63 MiB free: region 256 MiB, split (256 >= 128).
  const auto g = h.alloc(64_MiB);
  REQUIRE(g);
  CHECK(g->size == 64_MiB);
  CHECK(h.policy().stats().reserved == 526_MiB);
  CHECK(h.device().stats().mallocs == 7);
  h.finish();
}

TEST_CASE("bfc growth bumps the target for a request 256 bytes above it", "[bfc]") {
  Harness h("growth", plain_device(16_GiB));
  // R = 2 MiB + 256 > target 2 MiB: target -> 4 MiB (increased); region 4 MiB; target
  // stays 4. S = 4 MiB < 2R = 4 MiB + 512 and S - R = 2 MiB - 256 < 128 MiB: unsplit.
  const auto a = h.alloc(2_MiB + 256);
  REQUIRE(a);
  CHECK(a->size == 4_MiB);
  CHECK(h.policy().stats().reserved == 4_MiB);
  // No free chunk: region of the unchanged target, 4 MiB (not 8); split; target -> 8.
  const auto b = h.alloc(256);
  REQUIRE(b);
  CHECK(b->size == 256);
  CHECK(h.policy().stats().reserved == 8_MiB);
  // 4 MiB > the 4 MiB - 256 free: region 8 MiB; split (8 >= 8).
  const auto c = h.alloc(4_MiB);
  REQUIRE(c);
  CHECK(c->size == 4_MiB);
  CHECK(h.policy().stats().reserved == 16_MiB);
  CHECK(h.device().stats().mallocs == 3);
  h.finish();
}

TEST_CASE("bfc growth stops at the limit with a last region of whatever is left", "[bfc]") {
  // limit = 15 MiB + 800 B (exact, not rounded).
  const Bytes limit = 15_MiB + 800;
  Harness h("growth:limit=" + bytes_arg(limit), plain_device(16_GiB));
  CHECK(h.policy().stats().limit == limit);
  REQUIRE(h.alloc(2_MiB));  // region 2 MiB, pool 2, target 4
  REQUIRE(h.alloc(4_MiB));  // region 4 MiB, pool 6, target 8
  // available = align_down(15 MiB + 800 - 6 MiB, 256) = 9 MiB + 768 >= 8 MiB:
  // region min(8 MiB, 9 MiB + 768) = 8 MiB; pool 14; target 16.
  REQUIRE(h.alloc(8_MiB));
  CHECK(h.policy().stats().reserved == 14_MiB);
  // available = align_down(1 MiB + 800, 256) = 1 MiB + 768: region min(16 MiB, that) =
  // 1 MiB + 768. S - R = 768 < 128 MiB and S < 2R: the whole chunk is in use.
  const auto last = h.alloc(1_MiB);
  REQUIRE(last);
  CHECK(last->size == 1_MiB + 768);
  CHECK(h.policy().stats().reserved == 15_MiB + 768);
  CHECK(h.device().stats().mallocs == 4);
  // available = align_down(32, 256) = 0 < 256: Extend fails without a driver call; no
  // wholly free region for GC: OOM.
  CHECK_FALSE(h.alloc(256));
  CHECK(h.device().stats().mallocs == 4);
  CHECK(h.device().stats().failed_mallocs == 0);
  CHECK(h.policy().stats().reserved == 15_MiB + 768);
  h.finish();
}

TEST_CASE("bfc growth under a limit below 2 MiB takes one region of the rounded-down limit", "[bfc]") {
  // Initial target RoundedBytes(min(1000000, 2 MiB)) = 1000192; available =
  // align_down(1000000, 256) = 999936; region min(1000192, 999936) = 999936.
  Harness h("growth:limit=1000000B", plain_device(16_GiB));  // bare bytes below 1 MiB need the unit
  REQUIRE(h.alloc(1_KiB));
  CHECK(h.policy().stats().reserved == 999936);
  CHECK(h.policy().stats().limit == 1000000);
  h.finish();
}

TEST_CASE("bfc without growth preallocates the whole limit at the first request and never grows", "[bfc]") {
  // limit = 100 MiB + 300: the region is align_down(limit, 256) = 100 MiB + 256.
  const Bytes limit = 100_MiB + 300;
  Harness h("bfc:limit=" + bytes_arg(limit), plain_device(16_GiB));
  CHECK(h.policy().stats().reserved == 0);  // lazily: nothing before the first request
  CHECK(h.device().stats().mallocs == 0);
  const auto a = h.alloc(1_KiB);  // the region, split: 1024 at its base
  REQUIRE(a);
  CHECK(a->size == 1024);
  CHECK(h.policy().stats().reserved == 100_MiB + 256);
  CHECK(h.policy().stats().limit == limit);
  // 60 MiB from S = 100 MiB + 256 - 1024 = 100 MiB - 768: 2R = 120 MiB > S and
  // S - R = 40 MiB - 768 < 128 MiB, so not split: the whole 100 MiB - 768.
  const auto b = h.alloc(60_MiB);
  REQUIRE(b);
  CHECK(b->addr == a->addr + 1024);
  CHECK(b->size == 100_MiB - 768);
  // Nothing free. available = align_down(44, 256) = 0: no driver call, no GC: OOM.
  CHECK_FALSE(h.alloc(256));
  h.free(*b);
  // 30 MiB from the 100 MiB - 768 chunk: 2R = 60 MiB <= S: split.
  const auto c = h.alloc(30_MiB);
  REQUIRE(c);
  CHECK(c->addr == a->addr + 1024);
  CHECK(c->size == 30_MiB);
  CHECK(h.device().stats().mallocs == 1);
  CHECK(h.device().stats().failed_mallocs == 0);
  h.finish();
}

// ---------------------------------------------------------------------------------------
// §1.7 garbage collection, and release_cached.

TEST_CASE("bfc garbage collection frees wholly free regions and then extends", "[bfc]") {
  // growth, limit 8 MiB: regions 2 and 4 MiB (pool 6, target 8); the 2 MiB one freed.
  // 3 MiB: no chunk fits (2 MiB free). Extend: available 2 MiB < 3 MiB: false.
  // GC: T = 2 MiB; 3 MiB <= limit - pool + T = 8 - 6 + 2 = 4 MiB: free region 1 (pool 4).
  // Extend: available 4 MiB; target 8 >= 3; region min(8, 4) = 4 MiB; 4 < 6, 1 < 128:
  // the whole 4 MiB in use.
  SECTION("TensorFlow (gc on by default) gets the 3 MiB") {
    Harness h("growth:limit=8MiB", plain_device(16_GiB));
    const auto a = h.alloc(2_MiB);
    REQUIRE(h.alloc(4_MiB));
    h.free(*a);
    CHECK(h.policy().inspect(Detail::counters).releasable == 2_MiB);
    const auto c = h.alloc(3_MiB);
    REQUIRE(c);
    CHECK(c->size == 4_MiB);
    CHECK(h.policy().stats().reserved == 8_MiB);
    CHECK(h.policy().inspect(Detail::counters).releasable == 0);
    CHECK(h.device().stats().frees == 1);
    CHECK(h.device().stats().mallocs == 3);
    h.finish();
  }
  SECTION("gc=false OOMs on the same sequence") {
    Harness h("growth:limit=8MiB,gc=false", plain_device(16_GiB));
    const auto a = h.alloc(2_MiB);
    REQUIRE(h.alloc(4_MiB));
    h.free(*a);
    CHECK_FALSE(h.alloc(3_MiB));
    CHECK(h.policy().stats().reserved == 6_MiB);
    CHECK(h.policy().inspect(Detail::counters).releasable == 2_MiB);
    CHECK(h.device().stats().frees == 0);
    h.finish();
  }
}

TEST_CASE("bfc garbage collection gives up when even the freed regions would not be enough", "[bfc]") {
  // As above: limit 8 MiB, pool 6 MiB, region 1 (2 MiB) wholly free: GC's bound is
  // limit - pool + T = 4 MiB.
  Harness h("growth:limit=8MiB", plain_device(16_GiB));
  const auto a = h.alloc(2_MiB);
  REQUIRE(h.alloc(4_MiB));
  h.free(*a);
  // 4 MiB + 256 > 4 MiB: GC returns false and frees nothing; OOM.
  CHECK_FALSE(h.alloc(4_MiB + 256));
  CHECK(h.device().stats().frees == 0);
  CHECK(h.policy().stats().reserved == 6_MiB);
  // 4 MiB <= 4 MiB: GC frees region 1; Extend: available 4 MiB, region min(8, 4) = 4 MiB.
  const auto c = h.alloc(4_MiB);
  REQUIRE(c);
  CHECK(c->size == 4_MiB);
  CHECK(h.device().stats().frees == 1);
  CHECK(h.policy().stats().reserved == 8_MiB);
  h.finish();
}

TEST_CASE("bfc garbage collection frees every wholly free region, not just enough of them", "[bfc]") {
  // growth, limit 16 MiB: regions 2, 4, 8 MiB (pool 14, target 16); regions 1 and 2 freed.
  // 5 MiB fits neither free chunk; available 2 MiB < 5: Extend fails. GC: T = 6 MiB;
  // 5 <= 16 - 14 + 6 = 8: frees both (pool 8), though region 2 alone would do. Extend:
  // available 8 MiB; region min(16, 8) = 8 MiB; 8 < 10, 3 < 128: unsplit.
  Harness h("growth:limit=16MiB", plain_device(16_GiB));
  const auto a = h.alloc(2_MiB);
  const auto b = h.alloc(4_MiB);
  REQUIRE((a && b && h.alloc(8_MiB)));
  h.free(*a);
  h.free(*b);
  const auto c = h.alloc(5_MiB);
  REQUIRE(c);
  CHECK(c->size == 8_MiB);
  CHECK(h.device().stats().frees == 2);
  CHECK(h.policy().stats().reserved == 16_MiB);
  h.finish();
}

TEST_CASE("bfc garbage collection keeps its regions freed even when the next Extend is refused", "[bfc]") {
  // Device of 7 MiB, limit 8 MiB. Regions 2 and 4 MiB (device used 6), region 1 freed.
  // 3 MiB: Extend fails on the limit (available 2 MiB); GC frees region 1 (bound 4 MiB;
  // device used 4). Extend: region min(8, 4) = 4 MiB, but only 3 MiB is free on the
  // device: refused. Backpedal: 4194304 -> 3774976 (refused) -> 3397632 (refused) ->
  // 3057920 < R = 3145728: false. OOM, with region 1 gone.
  Harness h("growth:limit=8MiB", plain_device(7_MiB));
  const auto a = h.alloc(2_MiB);
  REQUIRE(h.alloc(4_MiB));
  h.free(*a);
  CHECK_FALSE(h.alloc(3_MiB));
  CHECK(h.policy().stats().reserved == 4_MiB);
  CHECK(h.device().used() == 4_MiB);
  CHECK(h.device().stats().frees == 1);
  CHECK(h.device().stats().failed_mallocs == 3);
  h.finish();
}

TEST_CASE("jax leaves garbage collection off unless asked", "[bfc]") {
  // A 32 MiB device: jax's limit is 0.75 x 32 MiB = 24 MiB. Regions 2, 4, 8 MiB (pool 14,
  // target 16); region 1 freed. 11 MiB: available 10 MiB < 11: Extend fails.
  // gc on: T = 2 MiB, 11 <= 24 - 14 + 2 = 12: free region 1 (pool 12); Extend: region
  // min(16, 12) = 12 MiB (the device has 32 - 12 = 20 MiB free); 12 < 22, 1 < 128: unsplit.
  SECTION("jax-growth: OOM") {
    Harness h("jax-growth", plain_device(32_MiB));
    CHECK(h.policy().stats().limit == 24_MiB);
    const auto a = h.alloc(2_MiB);
    REQUIRE((a && h.alloc(4_MiB) && h.alloc(8_MiB)));
    h.free(*a);
    CHECK_FALSE(h.alloc(11_MiB));
    CHECK(h.policy().stats().reserved == 14_MiB);
    CHECK(h.device().stats().frees == 0);
    h.finish();
  }
  SECTION("jax-growth:gc=true: served after freeing region 1") {
    Harness h("jax-growth:gc=true", plain_device(32_MiB));
    const auto a = h.alloc(2_MiB);
    REQUIRE((a && h.alloc(4_MiB) && h.alloc(8_MiB)));
    h.free(*a);
    const auto c = h.alloc(11_MiB);
    REQUIRE(c);
    CHECK(c->size == 12_MiB);
    CHECK(h.policy().stats().reserved == 24_MiB);
    CHECK(h.device().stats().frees == 1);
    h.finish();
  }
}

TEST_CASE("bfc release_cached frees every wholly free region and keeps the growth target", "[bfc]") {
  Harness h("growth", plain_device(16_GiB));
  const auto a = h.alloc(1_MiB);  // region 2 MiB, split; target -> 4
  const auto b = h.alloc(4_MiB);  // region 4 MiB; target -> 8
  const auto c = h.alloc(8_MiB);  // region 8 MiB; target -> 16
  REQUIRE((a && b && c));
  h.free(*a);
  h.free(*c);
  CHECK(h.policy().inspect(Detail::counters).releasable == 10_MiB);
  h.policy().release_cached();
  h.check();
  CHECK(h.policy().stats().reserved == 4_MiB);
  CHECK(h.policy().inspect(Detail::counters).releasable == 0);
  CHECK(h.device().used() == 4_MiB);
  CHECK(h.device().stats().frees == 2);
  // The target is not reset: the next region is 16 MiB.
  REQUIRE(h.alloc(1_MiB));
  CHECK(h.policy().stats().reserved == 20_MiB);
  h.finish();
}

// ---------------------------------------------------------------------------------------
// §1.6 backpedal: float arithmetic, versions, hangs.

TEST_CASE("bfc backpedals by 0.9 in single precision", "[bfc]") {
  // 0.9f = 15099494 / 2^24 = 0.89999997615814208984375. bytes -> float (24-bit mantissa),
  // times 0.9f rounded to float, truncated, rounded up to 256.
  //
  // 16 GiB = 2^34: 15099494 * 2^10 = 15461881856, exact in float and a multiple of 256.
  // (In double: 0.9 * 2^34 = 15461882265.6 -> 15461882368, 512 more.)
  CHECK(bfc_backpedal(16_GiB) == 15461881856);
  // 2^32: 15099494 * 2^8 = 3865470464. (Double: 3865470720.)
  CHECK(bfc_backpedal(Bytes{1} << 32) == 3865470464);
  // 2^32 + 256: float spacing above 2^32 is 512, so the value becomes 2^32 (ties to even)
  // before the multiply: the same 3865470464. (Double: 3865470796.8 -> 3865470976.)
  CHECK(bfc_backpedal((Bytes{1} << 32) + 256) == 3865470464);
  // 14584 MiB (TF's limit on a 16 GiB sm_90 card): exact product 14584 * 15099494 / 16 =
  // 13763188781.375; in [2^33, 2^34) float spacing is 1024: 13440614 * 1024 = 13763188736.
  // (Double: 0.9 * 15292432384 = 13763189145.6 -> 13763189248.)
  CHECK(bfc_backpedal(14584_MiB) == 13763188736);
  // 10 GiB: 5 * 15099494 = 75497470 has 27 bits, rounds to 75497472; * 2^7 = 9663676416 = 9 GiB.
  CHECK(bfc_backpedal(10_GiB) == 9_GiB);
  // 4 MiB = 2^22: 15099494 / 4 = 3774873.5 -> 3774873 -> 3774976.
  CHECK(bfc_backpedal(4_MiB) == 3774976);
  // 2 MiB: 1887436.75 -> 1887436 -> 1887488.
  CHECK(bfc_backpedal(2_MiB) == 1887488);
  // The small end: 2816 -> 2534.4 -> 2560; 2560 -> 2303.99994 -> 2303 -> 2304;
  // 2304 -> 2073.6 -> 2304 (stuck); 2048 -> 1843.2 -> 2048; 256 -> 230.4 -> 256.
  CHECK(bfc_backpedal(2816) == 2560);
  CHECK(bfc_backpedal(2560) == 2304);
  CHECK(bfc_backpedal(2304) == 2304);
  CHECK(bfc_backpedal(2048) == 2048);
  CHECK(bfc_backpedal(256) == 256);
}

TEST_CASE("bfc preallocation backs off to 90% when the device refuses the whole limit", "[bfc]") {
  // Device 9.5 GiB, limit 10 GiB (preallocating). First request 8 GiB: region 10 GiB is
  // refused; backpedal: bfc_backpedal(10 GiB) = 9 GiB fits. 9 GiB - 8 GiB = 1 GiB >=
  // 128 MiB: split, 1 GiB left free.
  // 1 GiB: exactly the remainder. 256 MiB: nothing free. Extend: available = 10 GiB - 9 GiB
  // = 1 GiB; region min(target, 1 GiB) = 1 GiB, but the device has 512 MiB: refused.
  // 2025-10 backpedals again: 1073741824 -> 966367744 -> 869731072 -> 782758144 ->
  // 704482304 -> 634034176 -> 570630912 (all refused) -> 513568000 <= 512 MiB: a second
  // region. S - R = 513568000 - 268435456 = 245132544 >= 128 MiB: split.
  // 2023 has spent its one backpedal on the first region: OOM after one refused call.
  const DeviceSpec device = plain_device(9_GiB + 512_MiB);
  SECTION("2025-10: a second region of what the device still has") {
    Harness h("bfc:limit=10GiB", device);
    const auto a = h.alloc(8_GiB);
    REQUIRE(a);
    CHECK(a->size == 8_GiB);
    CHECK(h.policy().stats().reserved == 9_GiB);
    CHECK(h.device().stats().failed_mallocs == 1);
    const auto b = h.alloc(1_GiB);
    REQUIRE(b);
    CHECK(b->addr == a->addr + 8_GiB);
    const auto c = h.alloc(256_MiB);
    REQUIRE(c);
    CHECK(c->size == 256_MiB);
    CHECK(h.policy().stats().reserved == 9_GiB + 513568000);
    CHECK(h.device().stats().mallocs == 2);
    CHECK(h.device().stats().failed_mallocs == 1 + 7);
    h.finish();
  }
  SECTION("2023: the first region backs off, a later refusal is an OOM at once") {
    Harness h("bfc:limit=10GiB,version=2023", device);
    const auto a = h.alloc(8_GiB);
    REQUIRE(a);
    CHECK(h.policy().stats().reserved == 9_GiB);
    REQUIRE(h.alloc(1_GiB));
    CHECK_FALSE(h.alloc(256_MiB));
    CHECK(h.last_hang().empty());
    CHECK(h.policy().stats().reserved == 9_GiB);
    CHECK(h.device().stats().mallocs == 1);
    CHECK(h.device().stats().failed_mallocs == 2);
    h.finish();
  }
}

TEST_CASE("bfc 2023 backpedals once per allocator lifetime; later versions every time", "[bfc]") {
  // A device refusing any single malloc above 3 MiB. growth, limit 1 GiB.
  // 1 MiB: region 2 MiB (accepted), split; target -> 4.
  // 2 MiB: 1 MiB free is too small. Region 4 MiB refused; backpedal 3774976 (refused),
  //   3397632 (refused), 3057920 <= 3 MiB: accepted. S < 2R, S - R < 128 MiB: unsplit.
  //   Target -> 8.
  // 2 MiB again: region 8 MiB refused.
  //   2023: the backpedal was spent: false; GC finds no wholly free region: OOM.
  //   2024-02 / 2025-10: 8388608 -> 7549952 -> 6795008 -> 6115584 -> 5504256 -> 4953856
  //   -> 4458496 -> 4012800 -> 3611648 -> 3250688 (all refused) -> 2925824: accepted.
  //   (8388608 * 0.9f = 7549747 exactly, rounded up to 7549952.)
  const std::vector<Bytes> first{2_MiB, 4194304, 3774976, 3397632, 3057920};
  SECTION("2023") {
    Driver d("growth:limit=1GiB,version=2023", 3_MiB);
    const auto a = d.alloc(1_MiB);
    REQUIRE(a);
    CHECK(a->size == 1_MiB);
    const auto b = d.alloc(2_MiB);
    REQUIRE(b);
    CHECK(b->size == 3057920);
    CHECK(d.device.attempts == first);
    CHECK_FALSE(d.alloc(2_MiB));
    CHECK(d.last_hang().empty());
    std::vector<Bytes> expected = first;
    expected.push_back(8_MiB);  // one refused call, no backpedal
    CHECK(d.device.attempts == expected);
    CHECK(d.policy->stats().reserved == 2_MiB + 3057920);
    d.finish();
  }
  for (const char* version : {"2024-02", "2025-10"}) {
    SECTION(std::string("repeated backpedal, version ") + version) {
      Driver d(std::string("growth:limit=1GiB,version=") + version, 3_MiB);
      REQUIRE(d.alloc(1_MiB));
      REQUIRE(d.alloc(2_MiB));
      const auto c = d.alloc(2_MiB);
      REQUIRE(c);
      CHECK(c->size == 2925824);
      std::vector<Bytes> expected = first;
      for (Bytes bytes : {8388608, 7549952, 6795008, 6115584, 5504256, 4953856, 4458496, 4012800, 3611648,
                          3250688, 2925824}) {
        expected.push_back(bytes);
      }
      CHECK(d.device.attempts == expected);
      CHECK(d.policy->stats().reserved == 2_MiB + 3057920 + 2925824);
      d.finish();
    }
  }
}

TEST_CASE("bfc 2025-10's progress guard gets past the tiny sizes where older versions hang", "[bfc]") {
  // A 2 KiB device; growth with limit 1 GiB; 1 KiB. Region 2 MiB refused, and the
  // backpedal chain from 2 MiB (1887488, 1698816, ..., 2816, 2560, 2304: 71 calls in all,
  // each refused since > 2048) reaches 2304, where RoundedBytes(2304 * 0.9f) = 2304.
  SECTION("2025-10: the guard takes 2304 - 256 = 2048, which the device accepts") {
    Harness h("growth:limit=1GiB", plain_device(2_KiB));
    const auto a = h.alloc(1_KiB);
    REQUIRE(a);
    CHECK(a->size == 1024);  // 2048 >= 2 * 1024: split
    CHECK(h.policy().stats().reserved == 2048);
    CHECK(h.last_hang().empty());
    CHECK(h.device().stats().failed_mallocs == 71);
    CHECK(h.device().stats().mallocs == 1);
    h.finish();
  }
  SECTION("2024-02: 2304 is refused and comes back as 2304 forever: a hang") {
    Harness h("growth:limit=1GiB,version=2024-02", plain_device(2_KiB));
    CHECK_FALSE(h.alloc(1_KiB));
    CHECK_FALSE(h.last_hang().empty());
    CHECK(h.policy().stats().reserved == 0);
    h.finish();
  }
  SECTION("2023: the same, in its first (and only) backpedal") {
    Harness h("growth:limit=1GiB,version=2023", plain_device(2_KiB));
    CHECK_FALSE(h.alloc(1_KiB));
    CHECK_FALSE(h.last_hang().empty());
    h.finish();
  }
}

TEST_CASE("bfc 2024-02 hangs for a request of 2304 bytes and not for 2305", "[bfc]") {
  // 2 KiB device, nothing fits. R = 2304: attempt 2304 is refused and 2304 >= R comes
  // back: stuck. R = 2560 (2305 B): attempts 2 MiB .. 2560 (70 calls) refused, then
  // 2304 < R: false, and GC has nothing: an ordinary OOM.
  SECTION("2304 B: hang") {
    Harness h("growth:limit=1GiB,version=2024-02", plain_device(2_KiB));
    CHECK_FALSE(h.alloc(2304));
    CHECK_FALSE(h.last_hang().empty());
    h.finish();
  }
  SECTION("2305 B: OOM") {
    Harness h("growth:limit=1GiB,version=2024-02", plain_device(2_KiB));
    CHECK_FALSE(h.alloc(2305));
    CHECK(h.last_hang().empty());
    CHECK(h.device().stats().failed_mallocs == 70);
    h.finish();
  }
  SECTION("2025-10, 2304 B: the guard steps to 2048 < R: OOM, no hang") {
    Harness h("growth:limit=1GiB", plain_device(2_KiB));
    CHECK_FALSE(h.alloc(2304));
    CHECK(h.last_hang().empty());
    CHECK(h.device().stats().failed_mallocs == 71);
    h.finish();
  }
}

TEST_CASE("bfc reports a hang when the growth target wraps to 0 after 43 doublings", "[bfc]") {
  // A device refusing every malloc above 1.5 MiB; growth, limit 128 MiB; 1 MiB requests.
  // Each region backs off into [1 MiB, 1.5 MiB], so S < 2R and S - R < 128 MiB: every
  // chunk is in use whole and every request makes a region. Each success doubles the
  // target (never increased: target >= 1 MiB): 2^21 * 2^43 = 2^64 wraps to 0 after the
  // 43rd region. The 44th Extend (available 128 MiB - pool is still > 1 MiB) doubles 0
  // forever.
  // Region 1: 2 MiB -> 1887488 -> 1698816 (refused) -> 1529088 (accepted).
  // Region 2: 4 MiB -> 3774976 -> ... -> 1625856 (refused) -> 1463296 (accepted).
  // The 43 regions sum to 64264704 B (each its own float32 backpedal chain from
  // min(target, available), emulated in Python).
  Driver d("growth:limit=128MiB", 3_MiB / 2);
  const auto first = d.alloc(1_MiB);
  REQUIRE(first);
  CHECK(first->size == 1529088);
  const auto second = d.alloc(1_MiB);
  REQUIRE(second);
  CHECK(second->size == 1463296);
  for (int i = 2; i < 43; ++i) {
    INFO("request " << i);
    REQUIRE(d.alloc(1_MiB));
    REQUIRE(d.last_hang().empty());
  }
  CHECK(d.device.mallocs == 43);
  CHECK(d.policy->stats().reserved == 64264704);
  CHECK_FALSE(d.alloc(1_MiB));
  CHECK_FALSE(d.last_hang().empty());
  CHECK(d.device.mallocs == 43);
  d.finish();
}

TEST_CASE("the engine stops a tenant at the event where bfc would loop forever", "[bfc]") {
  SECTION("the target wrap: hang_event is the 44th allocation") {
    // The device and requests of the test above, through the engine.
    TraceBuilder builder({"wrap", "test"});
    for (int i = 0; i < 50; ++i) builder.alloc(i, 1_MiB);
    Scenario scenario;
    scenario.check = true;
    scenario.tenants.push_back(TenantSpec{share(std::move(builder)), policy_maker("growth:limit=128MiB"), 0});
    CappedDevice device(3_MiB / 2);
    const RunResult run = run_on(device, scenario);
    const TenantResult& result = run.tenants[0];
    REQUIRE(result.hang_event);
    CHECK(*result.hang_event == 43);
    CHECK_FALSE(result.hang_reason.empty());
    CHECK(result.oom_count == 0);
    CHECK(result.events_replayed == 44);
    CHECK(result.device_mallocs == 43);
    CHECK(result.peak_reserved == 64264704);
    CHECK(device.used() == 0);
  }
  SECTION("the tiny backpedal: 2024-02 hangs at event 2, 2023 and 2025-10 OOM there") {
    // A 2560 B device, growth, limit 1 GiB.
    // Event 0, 1 KiB: region 2 MiB refused, the chain down to 2816 refused (69 calls),
    //   2560 accepted; split (2560 >= 2048): 1536 left free. Target -> 4 MiB.
    // Event 1, 1 KiB: the 1536 chunk, unsplit (1536 < 2048).
    // Event 2, 256 B: nothing free; region 4 MiB refused (device full); the chain from
    //   4 MiB goes down to 2304, refused:
    //   2024-02: 2304 again, forever: hang at event 2.
    //   2025-10: guard 2048, 1792, ..., 256, all refused, then 0 < 256: OOM.
    //   2023: its one backpedal went to event 0: the 4 MiB refusal is an OOM at once.
    TraceBuilder builder({"tiny", "test"});
    builder.alloc(0, 1_KiB);
    builder.alloc(1, 1_KiB);
    builder.alloc(2, 256);
    builder.alloc(3, 256);
    const auto trace = share(std::move(builder));
    Scenario scenario;
    scenario.device.capacity = 2560;
    scenario.check = true;
    scenario.tenants.push_back(TenantSpec{trace, policy_maker("growth:limit=1GiB,version=2024-02"), 0});
    RunResult run = allocsim::run(scenario);
    REQUIRE(run.tenants[0].hang_event);
    CHECK(*run.tenants[0].hang_event == 2);
    CHECK_FALSE(run.tenants[0].hang_reason.empty());
    CHECK(run.tenants[0].oom_count == 0);
    CHECK(run.tenants[0].events_replayed == 3);
    CHECK(run.tenants[0].device_mallocs == 1);

    scenario.tenants[0].policy = policy_maker("growth:limit=1GiB");
    run = allocsim::run(scenario);
    CHECK_FALSE(run.tenants[0].hang_event);
    REQUIRE(run.tenants[0].oom_count == 1);
    CHECK(run.tenants[0].first_oom()->event == 2);
    CHECK(run.tenants[0].device_failed_mallocs == 69 + 85);  // 4 MiB .. 256: 85 calls

    scenario.tenants[0].policy = policy_maker("growth:limit=1GiB,version=2023");
    run = allocsim::run(scenario);
    CHECK_FALSE(run.tenants[0].hang_event);
    REQUIRE(run.tenants[0].oom_count == 1);
    CHECK(run.tenants[0].first_oom()->event == 2);
    CHECK(run.tenants[0].device_failed_mallocs == 69 + 1);
  }
}

// ---------------------------------------------------------------------------------------
// §1.11 / §1.12: how the limit is chosen.

TEST_CASE("tf_min_system_memory follows TensorFlow's table", "[bfc]") {
  // available < 2 GiB: 225 MiB whatever the card; then by compute capability major.
  CHECK(tf_min_system_memory(2_GiB - 1, 9) == 225_MiB);
  CHECK(tf_min_system_memory(2_GiB - 1, 6) == 225_MiB);
  CHECK(tf_min_system_memory(2_GiB, 5) == 500_MiB);
  CHECK(tf_min_system_memory(2_GiB, 6) == 500_MiB);
  CHECK(tf_min_system_memory(2_GiB, 7) == 1050_MiB);
  CHECK(tf_min_system_memory(2_GiB, 8) == 1536_MiB);
  CHECK(tf_min_system_memory(2_GiB, 9) == 1800_MiB);
  CHECK(tf_min_system_memory(2_GiB, 10) == 1800_MiB);
  CHECK(tf_min_system_memory(80_GiB, 8) == 1536_MiB);
}

DeviceSpec card(Bytes capacity, Bytes context, int cc) {
  DeviceSpec spec = plain_device(capacity);
  spec.context_overhead = context;
  spec.compute_capability = cc;
  spec.granularity = 2_MiB;
  return spec;
}

TEST_CASE("bfc's default limit is the free memory at start less TensorFlow's reserve", "[bfc]") {
  SECTION("V100-like: 16160 MiB, 500 MiB context, sm_70") {
    // available 15660 MiB >= 2 GiB, major 7: reserve 1050 MiB; limit 14610 MiB, taken
    // whole as one region at the first request (a multiple of the 2 MiB page).
    Harness h("bfc", card(16160_MiB, 500_MiB, 70));
    CHECK(h.policy().stats().limit == 14610_MiB);
    CHECK(h.policy().stats().reserved == 0);
    REQUIRE(h.alloc(1));
    CHECK(h.policy().stats().reserved == 14610_MiB);
    CHECK(h.device().used() == 500_MiB + 14610_MiB);
    h.finish();
  }
  SECTION("the prealloc alias is the same policy") {
    Harness h("prealloc", card(16160_MiB, 500_MiB, 70));
    CHECK(h.policy().stats().limit == 14610_MiB);
    h.finish();
  }
  SECTION("T4-like, sm_75: major 7, 1050 MiB") {
    Harness h("bfc", card(15360_MiB, 500_MiB, 75));  // 14860 - 1050
    CHECK(h.policy().stats().limit == 13810_MiB);
    h.finish();
  }
  SECTION("RTX 3090-like, sm_86: major 8, 1536 MiB") {
    Harness h("bfc", card(24576_MiB, 500_MiB, 86));  // 24076 - 1536
    CHECK(h.policy().stats().limit == 22540_MiB);
    h.finish();
  }
  SECTION("a plain 16 GiB sm_90 device: 1800 MiB") {
    Harness h("bfc", plain_device(16_GiB));  // 16384 - 1800
    CHECK(h.policy().stats().limit == 14584_MiB);
    h.finish();
  }
  SECTION("under 2 GiB free: 225 MiB") {
    Harness h("bfc", plain_device(1_GiB));  // 1024 - 225
    CHECK(h.policy().stats().limit == 799_MiB);
    h.finish();
  }
  SECTION("a reserve not below what is free leaves the limit at everything free") {
    // available 225 MiB: 225 < 225 is false, limit stays 225 MiB. 256 B more: 256 B left.
    Harness exact("bfc", plain_device(225_MiB));
    CHECK(exact.policy().stats().limit == 225_MiB);
    exact.finish();
    Harness above("bfc", plain_device(225_MiB + 256));
    CHECK(above.policy().stats().limit == 256);
    above.finish();
  }
  SECTION("an explicit reserve below what is free") {
    Harness h("bfc:reserve=1GiB", plain_device(16_GiB));  // 16 - 1
    CHECK(h.policy().stats().limit == 15_GiB);
    h.finish();
  }
}

TEST_CASE("bfc's explicit reserve acts as gpu_system_memory_size_in_mb: applied last, if it fits", "[bfc]") {
  // §1.11 step 4: gpu_system_memory_size_in_mb (and TF_DEVICE_MIN_SYS_MEMORY_IN_MB) is an
  // override applied after steps 2-3: limit = available - reserve only if reserve <=
  // available, "else a warning and no change". Plain 16 GiB sm_90 device: available
  // 16 GiB, the default limit 16384 - 1800 = 14584 MiB.
  SECTION("reserve = available: 0 left (the test is <=, not <)") {
    Harness h("bfc:reserve=16GiB", plain_device(16_GiB));
    CHECK(h.policy().stats().limit == 0);
    h.finish();
  }
  SECTION("reserve > available: ignored, the default limit stays") {
    Harness h("bfc:reserve=" + bytes_arg(16_GiB + 256), plain_device(16_GiB));
    CHECK(h.policy().stats().limit == 14584_MiB);
    h.finish();
  }
  SECTION("with a fraction the override still applies, last") {
    // Step 3 gives 0.5 x 16 GiB = 8 GiB; step 4 then sets 16 GiB - 1 GiB = 15 GiB.
    Harness h("bfc:fraction=0.5,reserve=1GiB", plain_device(16_GiB));
    CHECK(h.policy().stats().limit == 15_GiB);
    h.finish();
  }
}

TEST_CASE("bfc's fraction takes a share of total memory, and an explicit limit is exact", "[bfc]") {
  SECTION("fraction 0.5 of the V100-like card's total, not of what is free") {
    // (uint64)(16160 MiB * 0.5) = 8080 MiB (of available it would be 7830 MiB).
    Harness h("bfc:fraction=0.5", card(16160_MiB, 500_MiB, 70));
    CHECK(h.policy().stats().limit == 8080_MiB);
    h.finish();
  }
  SECTION("fraction 0.3 of 16 GiB is truncated, the region rounded down to 256") {
    // 17179869184 * 0.3 = 5153960755.2 -> 5153960755; region align_down(.., 256) = 5153960704.
    Harness h("bfc:fraction=0.3", plain_device(16_GiB));
    CHECK(h.policy().stats().limit == 5153960755);
    REQUIRE(h.alloc(1));
    CHECK(h.policy().stats().reserved == 5153960704);
    h.finish();
  }
  SECTION("limit=1000000: exact; the region is 999936") {
    Harness h("bfc:limit=1000000B", plain_device(16_GiB));  // bare bytes below 1 MiB need the unit
    CHECK(h.policy().stats().limit == 1000000);
    REQUIRE(h.alloc(1));
    CHECK(h.policy().stats().reserved == 999936);
    h.finish();
  }
}

TEST_CASE("jax preallocates 75% of total memory; jax-growth grows toward the same limit", "[bfc]") {
  SECTION("jax on a plain 16 GiB device: one 12 GiB region") {
    Harness h("jax", plain_device(16_GiB));
    CHECK(h.policy().stats().limit == 12_GiB);
    REQUIRE(h.alloc(1));
    CHECK(h.policy().stats().reserved == 12_GiB);
    h.finish();
  }
  SECTION("jax on the V100-like card: 0.75 x 16160 MiB = 12120 MiB, of total") {
    Harness h("jax", card(16160_MiB, 500_MiB, 70));
    CHECK(h.policy().stats().limit == 12120_MiB);
    REQUIRE(h.alloc(1));
    CHECK(h.policy().stats().reserved == 12120_MiB);
    h.finish();
  }
  SECTION("jax-growth: the same limit, a 2 MiB first region") {
    Harness h("jax-growth", card(16160_MiB, 500_MiB, 70));
    CHECK(h.policy().stats().limit == 12120_MiB);
    REQUIRE(h.alloc(1));
    CHECK(h.policy().stats().reserved == 2_MiB);
    h.finish();
  }
}

// ---------------------------------------------------------------------------------------
// §1.10 statistics.

TEST_CASE("bfc reports TensorFlow's allocator statistics", "[bfc]") {
  // growth, limit 10 GiB:
  //   a 1000 B -> 1024 (region 2 MiB); b 3 MiB -> 4 MiB unsplit (region 4 MiB);
  //   free a (region 1 wholly free again); c 5000 B -> R 5120 from region 1, split.
  // num_allocs 3; in use 4 MiB + 5120; peak: 1024, 4 MiB + 1024, 4 MiB, 4 MiB + 5120 ->
  // 4 MiB + 5120; largest chunk handed out 4 MiB; pool 6 MiB; largest free chunk
  // 2 MiB - 5120 (region 2 is all in use); nothing wholly free.
  const auto run_sequence = [](Harness& h) {
    const auto a = h.alloc(1000);
    const auto b = h.alloc(3_MiB);
    REQUIRE((a && b));
    h.free(*a);
    const auto c = h.alloc(5000);
    REQUIRE(c);
    CHECK(c->size == 5120);
    return std::pair{*b, *c};
  };
  SECTION("2025-10") {
    Harness h("bfc:growth=true,limit=10GiB", plain_device(16_GiB));
    const auto [b, c] = run_sequence(h);
    std::vector<std::string> names;
    for (const PolicyStat& stat : h.policy().inspect(Detail::counters).extra) names.push_back(stat.name);
    std::sort(names.begin(), names.end());
    std::vector<std::string> expected{"num_allocs", "bytes_in_use", "peak_bytes_in_use", "largest_alloc_size",
                                      "bytes_limit", "pool_bytes", "peak_pool_bytes", "largest_free_block_bytes",
                                      "get_memory_info_current", "get_memory_info_peak"};
    std::sort(expected.begin(), expected.end());
    CHECK(names == expected);
    const Policy& p = h.policy();
    CHECK(extra_stat(p, "num_allocs") == 3);
    CHECK(extra_stat(p, "bytes_in_use") == 4_MiB + 5120);
    CHECK(extra_stat(p, "peak_bytes_in_use") == 4_MiB + 5120);
    CHECK(extra_stat(p, "largest_alloc_size") == 4_MiB);
    CHECK(extra_stat(p, "bytes_limit") == 10_GiB);
    CHECK(extra_stat(p, "pool_bytes") == 6_MiB);
    CHECK(extra_stat(p, "peak_pool_bytes") == 6_MiB);
    CHECK(extra_stat(p, "largest_free_block_bytes") == 2_MiB - 5120);
    CHECK(extra_stat(p, "get_memory_info_current") == 4_MiB + 5120);
    CHECK(extra_stat(p, "get_memory_info_peak") == 4_MiB + 5120);
    const PolicyStats stats = p.stats();
    CHECK(stats.allocated == 4_MiB + 5120);
    CHECK(stats.reserved == 6_MiB);
    CHECK(stats.largest_free == 2_MiB - 5120);
    CHECK(p.inspect(Detail::counters).releasable == 0);
    CHECK(stats.limit == 10_GiB);
    // Free b: region 2 wholly free (4 MiB); free c: region 1 too (6 MiB). Release both:
    // the pool drops to 0, its peak stays 6 MiB; the in-use peak stays.
    h.free(b);
    CHECK(h.policy().inspect(Detail::counters).releasable == 4_MiB);
    h.free(c);
    CHECK(h.policy().inspect(Detail::counters).releasable == 6_MiB);
    CHECK(extra_stat(p, "bytes_in_use") == 0);
    h.policy().release_cached();
    h.check();
    CHECK(extra_stat(p, "pool_bytes") == 0);
    CHECK(extra_stat(p, "peak_pool_bytes") == 6_MiB);
    CHECK(extra_stat(p, "peak_bytes_in_use") == 4_MiB + 5120);
    CHECK(extra_stat(p, "num_allocs") == 3);
    h.finish();
  }
  for (const char* version : {"2024-02", "2023"}) {
    SECTION(std::string("version ") + version + " never fills largest_free_block_bytes") {
      Harness h(std::string("bfc:growth=true,limit=10GiB,version=") + version, plain_device(16_GiB));
      run_sequence(h);
      CHECK(extra_stat(h.policy(), "largest_free_block_bytes") == 0);
      CHECK(extra_stat(h.policy(), "pool_bytes") == 6_MiB);
      CHECK(h.policy().stats().largest_free == 2_MiB - 5120);  // the simulator's own figure
      h.finish();
    }
  }
}

// ---------------------------------------------------------------------------------------
// The seed's two-process case.

TEST_CASE("a preallocating bfc tenant leaves another too little: a reservation OOM", "[bfc]") {
  // 16 GiB sm_90 device. Tenant 0 allocates 1 MiB at t = 0; tenant 1 needs 2.5 GiB at t = 1.
  // Tenant 0 on bfc: limit 16384 - 1800 = 14584 MiB, taken whole at its first request:
  // 1800 MiB left. Tenant 1 direct: 2560 MiB > 1800 MiB, nothing of its own to release:
  // reservation (1 MiB + 2.5 GiB live is far under the device).
  // Tenant 1 on growth (its limit 14584 MiB too, set at start): target 2 MiB -> 4096 MiB,
  // refused; backpedal 3686.4, 3317.8, 2986.0, 2687.4 MiB refused, then < 2560 MiB: false;
  // no region to collect: OOM, reservation again.
  // Tenant 0 on growth takes 2 MiB: both fit.
  TraceBuilder small({"small", "test"});
  small.alloc(0, 1_MiB);
  TraceBuilder large({"large", "test"});
  large.alloc(1, 2560_MiB);
  Scenario scenario;
  scenario.device.capacity = 16_GiB;
  scenario.check = true;
  scenario.tenants.push_back(TenantSpec{share(std::move(small)), policy_maker("bfc"), 0});
  scenario.tenants.push_back(TenantSpec{share(std::move(large)), policy_maker("direct"), 0});

  SECTION("bfc then direct") {
    const RunResult run = allocsim::run(scenario);
    CHECK(run.tenants[0].oom_count == 0);
    CHECK(run.tenants[0].peak_reserved == 14584_MiB);
    REQUIRE(run.tenants[1].oom_count == 1);
    CHECK(run.tenants[1].first_oom()->kind == OomKind::reservation);
  }
  SECTION("bfc then growth") {
    scenario.tenants[1].policy = policy_maker("growth");
    const RunResult run = allocsim::run(scenario);
    CHECK(run.tenants[0].oom_count == 0);
    REQUIRE(run.tenants[1].oom_count == 1);
    CHECK(run.tenants[1].first_oom()->kind == OomKind::reservation);
    CHECK_FALSE(run.tenants[1].hang_event);
  }
  SECTION("growth then direct: both fit") {
    scenario.tenants[0].policy = policy_maker("growth");
    const RunResult run = allocsim::run(scenario);
    CHECK(run.tenants[0].oom_count == 0);
    CHECK(run.tenants[1].oom_count == 0);
    CHECK(run.tenants[0].peak_reserved == 2_MiB);
  }
  SECTION("growth then growth: both fit") {
    scenario.tenants[0].policy = policy_maker("growth");
    scenario.tenants[1].policy = policy_maker("growth");
    const RunResult run = allocsim::run(scenario);
    CHECK(run.tenants[0].oom_count == 0);
    CHECK(run.tenants[1].oom_count == 0);
    CHECK(run.tenants[1].peak_reserved == 4096_MiB);  // the bumped region
  }
}

}  // namespace
}  // namespace allocsim::test

namespace allocsim::test {
namespace {

// Regions after a freed one move down in the list; a chunk must still touch its own.
// growth, limit 8 MiB: A = 2 MiB fills region 0 (2 MiB); B = 1 MiB opens region 1 (4 MiB,
// 3 MiB never touched); A freed; C = 3.5 MiB: available 8 - 6 = 2 MiB < 3.5, gc frees
// region 0 (3.5 <= 2 + 2) and opens region 2 of 4 MiB (C takes it whole: 4 < 7, 0.5 MiB
// < 128 MiB); D = 1 MiB best-fits region 1's 3 MiB chunk: touched up to 2 MiB from its
// start, so 2 MiB stay never touched.
TEST_CASE("bfc counts never-touched bytes of the right region after gc frees one before it", "[bfc]") {
  Driver driver("growth:limit=8MiB", Bytes{1} << 40);
  const auto a = driver.alloc(2_MiB);
  REQUIRE(a);
  REQUIRE(driver.alloc(1_MiB));
  CHECK(driver.policy->stats().never_touched == 3_MiB);
  driver.policy->deallocate(*a, 0);
  REQUIRE(driver.alloc(3_MiB + 512_KiB));
  CHECK(driver.device.frees == 1);
  CHECK(driver.policy->stats().reserved == 8_MiB);
  CHECK(driver.policy->stats().never_touched == 3_MiB);
  REQUIRE(driver.alloc(1_MiB));
  CHECK(driver.policy->stats().never_touched == 2_MiB);
  driver.policy->check();
}

}  // namespace
}  // namespace allocsim::test
