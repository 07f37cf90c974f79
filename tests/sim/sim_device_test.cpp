// SimDevice's virtual memory calls, against the cost model worked on paper.
#include <catch2/catch.hpp>

#include "sim/counter.hpp"
#include "sim/forwarding_device.hpp"
#include "sim/metered_device.hpp"
#include "sim/sim_device.hpp"

namespace allocsim {
namespace {

DeviceSpec spec() {
  DeviceSpec device;
  device.capacity = 64_MiB;
  device.context_overhead = 8_MiB;
  device.granularity = 2_MiB;
  return device;
}

TEST_CASE("Counter keeps current, peak and total", "[sim]") {
  Counter counter;
  counter.add(5);
  counter.add(3);
  counter.sub(6);
  counter.add(1);
  CHECK(counter.current == 3);
  CHECK(counter.peak == 8);
  CHECK(counter.total == 9);
}

TEST_CASE("SimDevice: physical memory is charged to used() like a malloc, at a malloc's cost", "[sim][vmm]") {
  SimDevice device(spec());
  const CostModel& cost = device.spec().cost;
  const auto page = device.create_physical(3_MiB);  // charged whole 2 MiB pages
  REQUIRE(page);
  CHECK(device.used() == 12_MiB);
  CHECK(device.elapsed() == cost.malloc_cost(3_MiB));
  CHECK(device.stats().physical.current == 4_MiB);
  CHECK(device.stats().mallocs == 1);
  CHECK_FALSE(device.create_physical(52_MiB + 1));  // 52 MiB are left
  CHECK(device.stats().failed_mallocs == 1);
  const Nanos before = device.elapsed();
  device.release_physical(*page);
  CHECK(device.elapsed() - before == cost.free_cost(3_MiB));
  CHECK(device.used() == 8_MiB);
  CHECK(device.stats().used.peak == 12_MiB);
  CHECK(device.stats().physical.current == 0);
  CHECK(device.stats().frees == 1);
}

TEST_CASE("SimDevice: one map call costs the map cost of all its pages, reserving costs nothing", "[sim][vmm]") {
  SimDevice device(spec());
  const CostModel& cost = device.spec().cost;
  const auto a = device.create_physical(2_MiB);
  const auto b = device.create_physical(4_MiB);
  REQUIRE((a && b));
  const Nanos start = device.elapsed();
  const Addr at = device.reserve_addresses(1_GiB);
  CHECK(device.elapsed() == start);
  CHECK(device.used() == 14_MiB);  // addresses take no memory
  const Segment pages[] = {*a, *b};
  device.map(at, pages);
  CHECK(device.elapsed() - start == cost.map_cost(6_MiB));  // 5 us + 6 MiB at 2e-6 ns/B
  CHECK(cost.map_cost(6_MiB) == 5'000 + 13);
  device.unmap(at, 6_MiB);
  CHECK(device.elapsed() - start == cost.map_cost(6_MiB) + cost.unmap_cost(6_MiB));
  CHECK(device.stats().maps == 1);
  CHECK(device.stats().unmaps == 1);
  CHECK(device.used() == 14_MiB);  // unmapped pages are still held
  const Addr other = device.reserve_addresses(1_GiB);
  CHECK(other >= at + 1_GiB);  // ranges never overlap
  device.release_addresses(at, 1_GiB);
}

TEST_CASE("MeteredDevice counts physical memory as device allocations and times every VMM call", "[sim][vmm]") {
  SimDevice sim(spec());
  Bytes peak_used = 0;
  MeteredDevice metered(sim, peak_used);
  const auto page = metered.create_physical(2_MiB);
  REQUIRE(page);
  const Addr at = metered.reserve_addresses(4_MiB);
  metered.map(at, std::span(&*page, 1));
  metered.unmap(at, 2_MiB);
  metered.release_physical(*page);
  CHECK(metered.mallocs() == 1);
  CHECK(metered.frees() == 1);
  CHECK(metered.reserved() == 0);
  CHECK(peak_used == 10_MiB);
  CHECK(metered.time_spent() == sim.elapsed());
}

TEST_CASE("a device without virtual memory says so; a forwarding device passes every call", "[sim][vmm]") {
  class Plain final : public Device {
   public:
    std::optional<Segment> malloc(Bytes bytes) override { return Segment{1_GiB, bytes}; }
    void free(Segment) override {}
    void copy(Addr, Addr, Bytes) override {}
    Bytes capacity() const override { return 1_GiB; }
    Bytes used() const override { return 0; }
    Bytes granularity() const override { return 1; }
    Nanos elapsed() const override { return 0; }
    int compute_capability() const override { return 80; }
  };
  Plain plain;
  CHECK_THROWS_WITH(plain.create_physical(2_MiB), Catch::Contains("no virtual memory API"));
  CHECK_THROWS_WITH(plain.reserve_addresses(2_MiB), Catch::Contains("no virtual memory API"));
  CHECK_THROWS_WITH(plain.unmap(0, 2_MiB), Catch::Contains("no virtual memory API"));
  SimDevice sim(spec());
  ForwardingDevice forwarding(sim);
  const auto page = forwarding.create_physical(2_MiB);
  REQUIRE(page);
  CHECK(sim.stats().physical.current == 2_MiB);
  forwarding.release_physical(*page);
  CHECK(forwarding.used() == sim.used());
  CHECK(forwarding.compute_capability() == sim.compute_capability());
}

}  // namespace
}  // namespace allocsim
