// The segment pool placement and compaction share, on numbers worked by hand.
#include <catch2/catch.hpp>

#include "harness.hpp"
#include "policies/common/segment_pool.hpp"
#include "sim/error.hpp"
#include "sim/sim_device.hpp"

namespace allocsim::test {
namespace {

TEST_CASE("a segment pool keeps each segment's usable bytes free, then live, then returns them", "[segment_pool]") {
  SimDevice device(plain_device(1_MiB));
  {
    SegmentPool pool(device);
    // 64 KiB with a 4 KiB guard: usable [addr, addr + 60 KiB).
    const auto first = pool.add(64_KiB, 4_KiB, 4_KiB);
    REQUIRE(first);
    CHECK(pool.reserved() == 64_KiB);
    CHECK(pool.free().total() == 60_KiB);
    CHECK(pool.segments()[0].end - pool.segments()[0].start == 60_KiB);
    const auto second = pool.add(8_KiB, 4_KiB, 0);
    REQUIRE(second);
    CHECK(pool.free().count() == 2);  // the guard keeps the two segments' ranges apart
    CHECK(pool.segment_of(second->addr + 100) == 1);

    const auto range = pool.free().best_fit(8_KiB);  // the second segment fits exactly
    REQUIRE(range);
    CHECK(range->addr == second->addr);
    pool.take(*range, 8_KiB);
    CHECK(pool.segments()[1].live == 8_KiB);
    CHECK(pool.releasable() == 64_KiB);  // only the first holds nothing
    pool.check("test", 4_KiB);

    pool.release_empty();
    CHECK(pool.segments().size() == 1);
    CHECK(pool.reserved() == 8_KiB);
    CHECK(pool.free().total() == 0);
    pool.give(second->addr, 8_KiB);
    CHECK(pool.releasable() == 8_KiB);
    pool.check("test", 4_KiB);
    CHECK_FALSE(pool.add(2_MiB, 4_KiB, 0));  // the device refuses: nothing changes
    CHECK(pool.segments().size() == 1);
  }
  CHECK(device.used() == 0);  // the destructor returned every segment
}

TEST_CASE("a segment pool's check finds live bytes it was not told of", "[segment_pool]") {
  SimDevice device(plain_device(1_MiB));
  SegmentPool pool(device);
  REQUIRE(pool.add(64_KiB, 256, 0));
  pool.free().take_front(*pool.free().best_fit(256), 256);  // behind the pool's back
  CHECK_THROWS_AS(pool.check("test", 256), Error);
}

}  // namespace
}  // namespace allocsim::test
