#include <catch2/catch.hpp>

#include "harness.hpp"

namespace allocsim::test {
namespace {

TEST_CASE("direct makes one device call per request, rounded to the device granularity", "[direct]") {
  DeviceSpec spec = plain_device(8_MiB);
  spec.granularity = 2_MiB;
  Harness harness("direct", spec);
  const auto one_byte = harness.alloc(1);
  REQUIRE(one_byte);
  CHECK(one_byte->size == 2_MiB);
  const auto exact = harness.alloc(2_MiB);
  CHECK(exact->size == 2_MiB);
  const auto over = harness.alloc(2_MiB + 1);
  CHECK(over->size == 4_MiB);
  CHECK(harness.device().stats().mallocs == 3);
  CHECK_FALSE(harness.alloc(1));  // 8 MiB charged already
  harness.free(*exact);
  CHECK(harness.device().stats().frees == 1);
  CHECK(harness.policy().stats().reserved == 6_MiB);
  harness.finish();
}

TEST_CASE("direct charges exact bytes on a plain device and makes no call for zero bytes", "[direct]") {
  Harness harness("direct", plain_device(1000));
  CHECK(harness.alloc(1000)->size == 1000);
  CHECK(harness.alloc(0)->size == 0);
  CHECK(harness.device().stats().mallocs == 1);
  harness.finish();
}

}  // namespace
}  // namespace allocsim::test
