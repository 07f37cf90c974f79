// vmm worked on paper, with 1 MiB pages on a 16 MiB device.
#include <catch2/catch.hpp>

#include "harness.hpp"
#include "sim/error.hpp"

namespace allocsim::test {
namespace {

std::uint64_t stat(Harness& harness, const std::string& name) {
  for (const PolicyStat& s : harness.policy().inspect(Detail::counters).extra) {
    if (s.name == name) return s.value;
  }
  FAIL("no stat " + name);
  return 0;
}

TEST_CASE("vmm stitches the pages of freed blocks into one range instead of copying", "[vmm]") {
  Harness harness("vmm:page=1MiB", plain_device(16_MiB));
  const auto a = harness.alloc(3_MiB);
  const auto b = harness.alloc(1_MiB);
  const auto c = harness.alloc(3_MiB);
  REQUIRE((a && b && c));
  CHECK(harness.policy().stats().reserved == 7_MiB);
  CHECK(stat(harness, "vmm_maps") == 3);
  harness.free(*a);
  harness.free(*c);  // two cached 3-page ranges, 1 MiB apart in virtual memory
  const auto d = harness.alloc(6_MiB);  // no cached range of 6 pages: unmap both, map their 6 pages anew
  REQUIRE(d);
  CHECK(d->size == 6_MiB);
  CHECK(harness.policy().stats().reserved == 7_MiB);  // not a byte more from the device
  CHECK(harness.device().stats().mallocs == 7);
  CHECK(harness.device().stats().bytes_copied == 0);
  CHECK(stat(harness, "vmm_unmaps") == 2);
  CHECK(stat(harness, "vmm_maps") == 4);
  CHECK(harness.device().stats().maps == 4);
  CHECK(harness.device().stats().unmaps == 2);
  harness.free(*d);
  const auto e = harness.alloc(6_MiB);  // the same page count: the cached range, as it is
  REQUIRE(e);
  CHECK(e->addr == d->addr);
  CHECK(stat(harness, "vmm_reused") == 1);
  CHECK(stat(harness, "vmm_maps") == 4);
  harness.finish();
}

TEST_CASE("vmm wastes only to page rounding: a page, a page + 256 B, small blocks sharing a page", "[vmm]") {
  Harness harness("vmm:page=1MiB", plain_device(16_MiB));
  const auto whole = harness.alloc(1_MiB);
  REQUIRE(whole);
  CHECK(whole->size == 1_MiB);
  const auto over = harness.alloc(1_MiB + 1);
  REQUIRE(over);
  CHECK(over->size == 2_MiB);
  const auto under = harness.alloc(1_MiB - 256);  // under a page: a small page of its own
  REQUIRE(under);
  CHECK(under->size == 1_MiB - 256);
  const auto tiny = harness.alloc(1);  // the 256 B left in that small page
  REQUIRE(tiny);
  CHECK(tiny->addr == under->addr + under->size);
  CHECK(harness.policy().stats().reserved == 4_MiB);
  const auto more = harness.alloc(100);  // a second small page
  REQUIRE(more);
  CHECK(harness.policy().stats().reserved == 5_MiB);
  harness.finish();
}

TEST_CASE("vmm turns an empty small page back into a page for a large request", "[vmm]") {
  Harness harness("vmm:page=1MiB", plain_device(2_MiB));
  const auto small = harness.alloc(4_KiB);
  REQUIRE(small);
  harness.free(*small);
  const auto large = harness.alloc(2_MiB);  // the device has no third page: the small one is unmapped
  REQUIRE(large);
  CHECK(harness.policy().stats().reserved == 2_MiB);
  CHECK_FALSE(harness.alloc(1_MiB));  // nothing left anywhere
  harness.finish();
}

TEST_CASE("vmm checks its page size", "[vmm]") {
  SimDevice device(plain_device(1_MiB));
  CHECK_THROWS_AS(make_policy("vmm:page=1000", device), Error);
}

}  // namespace
}  // namespace allocsim::test
