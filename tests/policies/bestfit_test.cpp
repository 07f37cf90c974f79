// bestfit worked on paper: a 2 KiB device, so the region is 2 KiB at the device's first
// address, and every offset below is from there.
#include <catch2/catch.hpp>

#include "harness.hpp"
#include "sim/error.hpp"

namespace allocsim::test {
namespace {

TEST_CASE("bestfit places by smallest fit, then lowest address, and splits the rest off", "[bestfit]") {
  Harness harness("bestfit", plain_device(2_KiB));
  const auto a = harness.alloc(256);
  const auto b = harness.alloc(300);  // rounds to 512
  const auto c = harness.alloc(256);
  REQUIRE((a && b && c));
  const Addr base = a->addr;
  CHECK(b->addr == base + 256);
  CHECK(b->size == 512);
  CHECK(c->addr == base + 768);
  harness.free(*b);  // free: [256, 768) of 512 and [1024, 2048) of 1024
  const auto d = harness.alloc(200);
  REQUIRE(d);
  CHECK(d->addr == base + 256);  // the 512 hole beats the 1024 tail
  const auto e = harness.alloc(512);
  REQUIRE(e);
  CHECK(e->addr == base + 1024);  // the 256 hole left is too small
  CHECK(harness.policy().stats().largest_free == 512);
  harness.finish();
}

TEST_CASE("bestfit merges a freed block with free neighbours on both sides", "[bestfit]") {
  Harness harness("bestfit", plain_device(1_KiB));
  const auto a = harness.alloc(256);
  const auto b = harness.alloc(256);
  const auto c = harness.alloc(256);
  REQUIRE((a && b && c));
  harness.free(*a);
  harness.free(*c);  // merges with the 256 tail: free 256 + 512
  CHECK(harness.policy().stats().largest_free == 512);
  harness.free(*b);
  CHECK(harness.policy().stats().largest_free == 1_KiB);
  REQUIRE(harness.alloc(1_KiB));  // the whole region again
  harness.finish();
}

TEST_CASE("bestfit rounds at the alignment boundary", "[bestfit]") {
  Harness harness("bestfit:alignment=512", plain_device(4_KiB));
  CHECK(harness.alloc(511)->size == 512);
  CHECK(harness.alloc(512)->size == 512);
  CHECK(harness.alloc(513)->size == 1024);
  harness.finish();
}

TEST_CASE("bestfit takes a region of the given size, or of everything free", "[bestfit]") {
  Harness sized("bestfit:region=1MiB", plain_device(16_MiB));
  REQUIRE(sized.alloc(1));
  CHECK(sized.policy().stats().reserved == 1_MiB);
  CHECK_FALSE(sized.alloc(1_MiB));  // 256 bytes are taken and the region never grows
  sized.finish();

  DeviceSpec paged = plain_device(16_MiB + 1_KiB);
  paged.granularity = 2_MiB;
  Harness whole("bestfit", paged);
  REQUIRE(whole.alloc(1));
  CHECK(whole.policy().stats().reserved == 16_MiB);  // whole pages only
  whole.finish();
}

TEST_CASE("bestfit rejects bad options with the reason", "[bestfit]") {
  SimDevice device(plain_device(1_MiB));
  CHECK_THROWS_WITH(make_policy("bestfit:alignment=300", device), Catch::Contains("power of two"));
  CHECK_THROWS_WITH(make_policy("bestfit:region=1000", device), Catch::Contains("multiple of the alignment"));
  CHECK_THROWS_WITH(make_policy("bestfit:size=1", device), Catch::Contains("valid keys: region=0, alignment=256"));
}

}  // namespace
}  // namespace allocsim::test
