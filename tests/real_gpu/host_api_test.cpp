// The host stand-in must be as strict as a GPU would be, or the harness tests prove little.
#include <catch2/catch.hpp>

#include "real_gpu/host_api.hpp"
#include "real_gpu/host_card.hpp"
#include "sim/error.hpp"

namespace allocsim {
namespace {

HostDeviceConfig small(bool backed) { return test::host_card(64_MiB, 8_MiB, backed); }

TEST_CASE("host stand-in: whole pages are charged, the context is in use from the start", "[real_gpu]") {
  HostDeviceApi api(small(false));
  CHECK(api.mem_get_info().total == 64_MiB);
  CHECK(api.mem_get_info().free == 56_MiB);
  const auto a = api.malloc(1);
  REQUIRE(a);
  CHECK(*a % 512 == 0);
  CHECK(api.mem_get_info().free == 54_MiB);
  const auto b = api.malloc(2_MiB + 1);
  REQUIRE(b);
  CHECK(api.mem_get_info().free == 50_MiB);
  api.free(*a);
  api.free(*b);
  CHECK(api.mem_get_info().free == 56_MiB);
  CHECK(api.counters().mallocs == 2);
  CHECK(api.counters().frees == 2);
}

TEST_CASE("host stand-in: out of memory at exactly the free pages", "[real_gpu]") {
  HostDeviceApi api(small(false));
  const auto all = api.malloc(56_MiB);  // every free page
  REQUIRE(all);
  CHECK_FALSE(api.malloc(1));
  CHECK(api.counters().failed_mallocs == 1);
  api.free(*all);
  CHECK_FALSE(api.malloc(56_MiB + 1));  // one byte more is one page more
  CHECK(api.malloc(56_MiB - 2_MiB + 1));
}

TEST_CASE("host stand-in: misuse is an error, as a sanitizer would report it", "[real_gpu]") {
  HostDeviceApi api(small(false));
  const auto a = api.malloc(3_MiB);
  REQUIRE(a);
  CHECK_THROWS_AS(api.free(*a + 512), Error);
  CHECK_THROWS_AS(api.touch(*a, 3_MiB + 1), Error);
  CHECK_THROWS_AS(api.touch(*a + 1_MiB, 2_MiB + 1), Error);
  CHECK_NOTHROW(api.touch(*a + 1_MiB, 2_MiB));
  CHECK_THROWS_AS(api.unmap(*a, 4_MiB), Error);             // made by malloc
  CHECK_THROWS_AS(api.create_physical(3_MiB), Error);       // not whole pages
  const auto physical = api.create_physical(4_MiB);
  REQUIRE(physical);
  const Addr m = api.reserve_addresses(4_MiB);
  api.map(m, std::span(&*physical, 1));
  CHECK_THROWS_AS(api.free(m), Error);           // made by map
  CHECK_THROWS_AS(api.unmap(m, 2_MiB), Error);   // another size
  api.unmap(m, 4_MiB);
  api.release_physical(*physical);
  api.release_addresses(m, 4_MiB);
  api.free(*a);
  CHECK_THROWS_AS(api.free(*a), Error);  // twice
  CHECK(api.live_allocations() == 0);
}

TEST_CASE("host stand-in: backed memory is written by touch and moved by copy", "[real_gpu]") {
  HostDeviceApi api(small(true));
  const auto a = api.malloc(4096);
  const auto b = api.malloc(4096);
  REQUIRE(a);
  REQUIRE(b);
  CHECK(*a % 512 == 0);
  CHECK_FALSE(api.fully_touched(*a));
  api.touch(*a, 4096);
  CHECK(api.fully_touched(*a));
  const auto* bytes = reinterpret_cast<const unsigned char*>(*a);
  CHECK(bytes[0] == 0xA5);
  CHECK(bytes[4095] == 0xA5);
  reinterpret_cast<unsigned char*>(*a)[7] = 42;
  api.copy(*b, *a, 4096);
  CHECK(reinterpret_cast<const unsigned char*>(*b)[7] == 42);
  CHECK(api.counters().copies == 1);
  api.free(*a);
  api.free(*b);
}

TEST_CASE("host stand-in: physical memory is charged when created and mapped inside a reservation", "[real_gpu]") {
  HostDeviceApi api(small(false));
  const auto p = api.create_physical(4_MiB);
  const auto q = api.create_physical(2_MiB);
  REQUIRE((p && q));
  CHECK(api.mem_get_info().free == 50_MiB);  // 56 MiB less 6: charged at create, before any map
  CHECK_FALSE(api.create_physical(52_MiB));  // 50 MiB are left
  CHECK(api.counters().failed_creates == 1);
  const Addr at = api.reserve_addresses(8_MiB);
  CHECK(api.mem_get_info().free == 50_MiB);  // addresses cost no memory
  const Segment pages[] = {*p, *q};
  CHECK_THROWS_AS(api.map(at + 512, pages), Error);    // not on a page
  CHECK_THROWS_AS(api.map(at + 4_MiB, pages), Error);  // past the reservation's end
  api.map(at, pages);                                  // p at [0, 4), q at [4, 6) MiB
  CHECK(api.counters().maps == 2);                     // one mapping per page
  CHECK_THROWS_AS(api.map(at + 4_MiB, std::span(&*q, 1)), Error);  // over a mapping
  CHECK_NOTHROW(api.touch(at + 1_MiB, 5_MiB));  // across both mappings
  CHECK_THROWS_AS(api.touch(at + 1_MiB, 6_MiB), Error);  // past the mapped end
  CHECK_THROWS_AS(api.unmap(at, 2_MiB), Error);          // half of p's mapping
  CHECK_THROWS_AS(api.release_addresses(at, 8_MiB), Error);  // still mapped
  api.release_physical(*p);                  // released while mapped: the memory stays
  CHECK(api.mem_get_info().free == 50_MiB);
  CHECK_THROWS_AS(api.release_physical(*p), Error);  // twice
  api.unmap(at, 4_MiB);                      // p's last mapping: its memory goes
  CHECK(api.mem_get_info().free == 54_MiB);
  api.unmap(at + 4_MiB, 2_MiB);
  CHECK(api.counters().unmaps == 2);
  api.map(at + 2_MiB, std::span(&*q, 1));  // unmapped memory maps again, anywhere in the range
  api.unmap(at + 2_MiB, 2_MiB);
  api.release_physical(*q);
  api.release_addresses(at, 8_MiB);
  CHECK(api.mem_get_info().free == 56_MiB);
  CHECK(api.live_allocations() == 0);
}

}  // namespace
}  // namespace allocsim
