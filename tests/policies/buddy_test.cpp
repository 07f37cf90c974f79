// The binary buddy system worked on paper: a 4 KiB region at the device's first address.
#include <catch2/catch.hpp>

#include "harness.hpp"

namespace allocsim::test {
namespace {

TEST_CASE("buddy rounds to the next power of two: waste at 2^k + 1", "[buddy]") {
  Harness harness("buddy", plain_device(64_KiB));
  CHECK(harness.alloc(4095)->size == 4096);
  CHECK(harness.alloc(4096)->size == 4096);
  CHECK(harness.alloc(4097)->size == 8192);  // 4095 bytes wasted
  CHECK(harness.alloc(1)->size == 256);      // min_block
  harness.finish();
}

TEST_CASE("buddy's waste at 2^k - 1, 2^k and 2^k + 1, at the smallest block and at 1 MiB", "[buddy]") {
  Harness harness("buddy", plain_device(8_MiB));
  CHECK(harness.alloc(255)->size == 256);  // 1 byte wasted
  CHECK(harness.alloc(256)->size == 256);  // none
  CHECK(harness.alloc(257)->size == 512);  // 255 bytes
  CHECK(harness.alloc(1_MiB - 1)->size == 1_MiB);
  CHECK(harness.alloc(1_MiB)->size == 1_MiB);
  CHECK(harness.alloc(1_MiB + 1)->size == 2_MiB);  // 1 MiB - 1 wasted
  CHECK(harness.policy().stats().allocated == 256 + 256 + 512 + 4_MiB);
  harness.finish();
}

TEST_CASE("buddy halves the lowest free block and merges buddies back", "[buddy]") {
  Harness harness("buddy", plain_device(4_KiB));
  const Block a = *harness.alloc(1_KiB);  // 4K -> 2K + 2K -> 1K + 1K: a at 0
  const Block b = *harness.alloc(1_KiB);  // its buddy at 1K
  const Block c = *harness.alloc(2_KiB);  // the upper half at 2K
  CHECK(b.addr - a.addr == 1_KiB);
  CHECK(c.addr - a.addr == 2_KiB);
  CHECK_FALSE(harness.alloc(256));  // full
  harness.free(a);
  CHECK(harness.policy().stats().largest_free == 1_KiB);  // b still holds a's buddy
  harness.free(b);
  CHECK(harness.policy().stats().largest_free == 2_KiB);  // a + b merged
  harness.free(c);
  CHECK(harness.policy().stats().largest_free == 4_KiB);  // and with c's half: the whole region
  harness.finish();
}

TEST_CASE("buddy takes a power-of-two region and checks its options", "[buddy]") {
  Harness harness("buddy", plain_device(6_KiB));
  REQUIRE(harness.alloc(1));
  CHECK(harness.policy().stats().reserved == 4_KiB);  // 6 KiB rounded down
  harness.finish();
  SimDevice device(plain_device(1_MiB));
  CHECK_THROWS_WITH(make_policy("buddy:min_block=100", device), Catch::Contains("power of two"));
}

}  // namespace
}  // namespace allocsim::test
