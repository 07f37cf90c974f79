// compact worked on paper: one region of 4 KiB (a single region needs no guard); every
// offset below is from its first address. The device
// copies 1 byte per ns, so a move of B bytes costs B ns.
#include <catch2/catch.hpp>

#include "harness.hpp"
#include "sim/error.hpp"

namespace allocsim::test {
namespace {

DeviceSpec slow_copy_device() {
  DeviceSpec spec = plain_device(8_KiB);
  spec.cost.copy_bytes_per_ns = 1;
  return spec;
}

// Where the harness says the block of this allocation lives now (after any moves).
Addr addr_now(const Harness& harness, const Block& block) {
  for (const auto& [addr, live] : harness.live()) {
    if (live.id == block.id) return addr;
  }
  FAIL("block not live");
  return 0;
}

std::uint64_t stat(Harness& harness, const std::string& name) {
  for (const PolicyStat& s : harness.policy().inspect(Detail::counters).extra) {
    if (s.name == name) return s.value;
  }
  FAIL("no stat " + name);
  return 0;
}

TEST_CASE("compact slides every block down when holes cannot hold a request", "[compact]") {
  Harness harness("compact:region=4096,strategy=slide", slow_copy_device());
  const auto a = harness.alloc(1024);
  const auto b = harness.alloc(1024);
  const auto c = harness.alloc(1024);
  const auto d = harness.alloc(1024);
  REQUIRE((a && b && c && d));
  const Addr base = a->addr;
  CHECK(d->addr == base + 3072);
  harness.free(*a);
  harness.free(*c);  // 2 KiB free in two 1 KiB holes: [0, 1024) and [2048, 3072)
  CHECK(harness.policy().stats().largest_free == 1024);
  const Nanos before = harness.device().elapsed();
  const auto e = harness.alloc(2048);
  REQUIRE(e);
  // b 1024 -> 0 and d 3072 -> 1024: 2 KiB copied, e in the 2 KiB opened at the top.
  CHECK(addr_now(harness, *b) == base);
  CHECK(addr_now(harness, *d) == base + 1024);
  CHECK(e->addr == base + 2048);
  CHECK(harness.moves() == 2);
  CHECK(harness.device().stats().bytes_copied == 2048);
  CHECK(harness.device().elapsed() - before == 2048);
  CHECK(stat(harness, "compactions") == 1);
  CHECK(stat(harness, "compaction_bytes_moved") == 2048);
  CHECK(stat(harness, "compaction_time_ns") == 2048);
  CHECK(harness.policy().stats().largest_free == 0);
  harness.finish();
}

TEST_CASE("compact:strategy=gap moves the fewest bytes that open one gap", "[compact]") {
  Harness harness("compact:region=4096,strategy=gap", slow_copy_device());
  const auto a = harness.alloc(512);   // 0
  const auto b = harness.alloc(512);   // 512
  const auto c = harness.alloc(1024);  // 1024
  const auto d = harness.alloc(512);   // 2048
  const auto e = harness.alloc(512);   // 2560
  const auto f = harness.alloc(1024);  // 3072
  REQUIRE((a && b && c && d && e && f));
  const Addr base = a->addr;
  harness.free(*b);
  harness.free(*d);  // holes of 512 at 512 and at 2048
  // Windows of 1 KiB: [0, 1024) holds a (512 B), [512, 1536) c (1 KiB), [2048, 3072) e
  // (512 B), [3072, 4096) f; the first of the cheapest is at 0. a goes to the best fit
  // outside it, the hole at 2048; slide would have copied 2.5 KiB.
  const auto g = harness.alloc(1024);
  REQUIRE(g);
  CHECK(g->addr == base);
  CHECK(addr_now(harness, *a) == base + 2048);
  CHECK(addr_now(harness, *c) == base + 1024);
  CHECK(addr_now(harness, *e) == base + 2560);
  CHECK(addr_now(harness, *f) == base + 3072);
  CHECK(harness.moves() == 1);
  CHECK(stat(harness, "compaction_bytes_moved") == 512);
  CHECK(harness.device().stats().bytes_copied == 512);
  harness.finish();
}

TEST_CASE("compact grows only when the free bytes in total are too few, and never moves on an OOM", "[compact]") {
  Harness harness("compact:segment=1KiB,grow=add", plain_device(4_KiB));
  const auto a = harness.alloc(512);  // a segment of 1 KiB: 768 usable
  REQUIRE(a);
  CHECK(harness.policy().stats().reserved == 1024);
  const auto b = harness.alloc(512);  // 256 free < 512: a second segment
  REQUIRE(b);
  CHECK(harness.policy().stats().reserved == 2048);
  CHECK_FALSE(harness.alloc(4_KiB));  // more than the device: no copy, no move
  CHECK(harness.moves() == 0);
  CHECK(harness.device().stats().bytes_copied == 0);
  harness.finish();
}

TEST_CASE("compact grows by re-making its top segment larger when that copies no more than it serves", "[compact]") {
  Harness harness("compact:segment=1KiB", plain_device(8_KiB));
  const auto a = harness.alloc(512);  // a segment of 1 KiB: 768 usable, 256 left
  REQUIRE(a);
  const auto b = harness.alloc(512);  // a (512 B <= 512 B) moves to a segment of 512 + 512 + 256
  REQUIRE(b);
  CHECK(harness.policy().stats().reserved == 1280);
  CHECK(harness.moves() == 1);
  CHECK(b->addr == addr_now(harness, *a) + 512);
  CHECK(harness.policy().stats().largest_free == 0);
  const auto c = harness.alloc(256);  // the 1 KiB of blocks below outweigh 256 B: a new segment
  REQUIRE(c);
  CHECK(harness.policy().stats().reserved == 1280 + 1024);
  CHECK(harness.moves() == 1);
  harness.finish();
}

TEST_CASE("compact:trigger=threshold compacts after a free that fragments the pool", "[compact]") {
  Harness harness("compact:region=4096,trigger=threshold,threshold=0.4", plain_device(8_KiB));
  const auto a = harness.alloc(1024);
  const auto b = harness.alloc(1024);
  const auto c = harness.alloc(1024);
  REQUIRE((a && b && c));
  harness.free(*a);  // free 1 KiB at 0 and 1 KiB on top: 1 - 1024 / 2048 = 0.5 > 0.4
  CHECK(harness.moves() == 2);
  CHECK(addr_now(harness, *b) == b->addr - 1024);
  CHECK(harness.policy().stats().largest_free == 2048);
  harness.finish();
}

TEST_CASE("compact rejects bad options", "[compact]") {
  SimDevice device(plain_device(1_MiB));
  CHECK_THROWS_AS(make_policy("compact:trigger=sometimes", device), Error);
  CHECK_THROWS_AS(make_policy("compact:strategy=shuffle", device), Error);
  CHECK_THROWS_AS(make_policy("compact:threshold=2", device), Error);
  CHECK_THROWS_AS(make_policy("compact:region=1000", device), Error);
  CHECK(find_policy("defrag").name == "compact");
}

}  // namespace
}  // namespace allocsim::test
