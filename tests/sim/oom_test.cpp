// The OOM classification on numbers worked by hand.
#include <catch2/catch.hpp>

#include "sim/oom.hpp"

namespace allocsim {
namespace {

// The failing policy: its cheap counters and what release_cached() would give back.
struct PolicyAtOom {
  Bytes allocated, reserved, largest_free, releasable, limit;
};

OomContext context(Bytes request, Bytes live, Bytes available, PolicyAtOom policy) {
  const PolicyStats stats{.allocated = policy.allocated, .reserved = policy.reserved,
                          .largest_free = policy.largest_free, .limit = policy.limit};
  return OomContext{request, live, live, 8_GiB, available, stats, policy.releasable, 0, {}};
}

TEST_CASE("an OOM is capacity when the live bytes could never fit", "[oom]") {
  CHECK(classify_oom(context(5_GiB, 4_GiB, 0, {4_GiB, 8_GiB, 1_GiB, 0, 0})) == OomKind::capacity);
  CHECK(classify_oom(context(4_GiB, 4_GiB, 0, {4_GiB, 8_GiB, 1_GiB, 0, 0})) != OomKind::capacity);  // exactly fits
  // A memory_limit is the tenant's own capacity.
  CHECK(classify_oom(context(2_GiB, 3_GiB, 4_GiB, {3_GiB, 4_GiB, 1_GiB, 0, 4_GiB})) == OomKind::capacity);
}

TEST_CASE("an OOM is fragmentation when enough bytes are free but in pieces", "[oom]") {
  // The seed article: 8 GiB device, 4 GiB in use, a 3 GiB request, holes of 1 GiB.
  CHECK(classify_oom(context(3_GiB, 4_GiB, 0, {4_GiB, 8_GiB, 1_GiB, 0, 0})) == OomKind::fragmentation);
}

TEST_CASE("a policy's own limit caps what the device's free bytes can do for it", "[oom]") {
  // A pool at its 8 GiB limit with 4 GiB free in 1 GiB holes; the device still has 5 GiB
  // free, but the limit forbids taking any: a 3 GiB request fails for fragmentation.
  CHECK(classify_oom(context(3_GiB, 4_GiB, 5_GiB, {4_GiB, 8_GiB, 1_GiB, 0, 8_GiB})) == OomKind::fragmentation);
  // Without the limit the device could serve it: the bytes are there, held by nobody.
  CHECK(classify_oom(context(3_GiB, 4_GiB, 5_GiB, {4_GiB, 8_GiB, 1_GiB, 0, 0})) == OomKind::reservation);
}

TEST_CASE("an OOM is reservation when a cache or another tenant holds the bytes", "[oom]") {
  // Another process preallocated: this tenant has nothing, the device has 1 GiB free.
  CHECK(classify_oom(context(2_GiB, 1_GiB, 1_GiB, {0, 0, 0, 0, 0})) == OomKind::reservation);
  // This policy caches 3 GiB of wholly free segments it does not give back.
  CHECK(classify_oom(context(3_GiB, 1_GiB, 1_GiB, {1_GiB, 4_GiB, 2_GiB, 2_GiB, 0})) == OomKind::reservation);
}

}  // namespace
}  // namespace allocsim
