// bestfit worked on paper: a 2 KiB device, so the region is 2 KiB at the device's first
// address, and every offset below is from there.
#include <catch2/catch.hpp>

#include "harness.hpp"
#include "policies/placement.hpp"
#include "sim/sim_device.hpp"
#include "sim/error.hpp"
#include "workloads/random_trace.hpp"

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

TEST_CASE("bestfit:grow takes segments on demand, each with a guard, and returns empty ones", "[bestfit]") {
  Harness harness("bestfit:grow=1KiB", plain_device(16_KiB));
  CHECK(harness.policy().stats().reserved == 0);  // nothing up front
  const auto a = harness.alloc(512);  // a segment of 1 KiB: 768 usable
  REQUIRE(a);
  CHECK(harness.policy().stats().reserved == 1_KiB);
  const auto b = harness.alloc(256);  // fits in the same segment, right after a
  REQUIRE(b);
  CHECK(b->addr == a->addr + 512);
  const auto c = harness.alloc(2_KiB);  // 2 KiB + guard + alignment: a segment of 2.5 KiB
  REQUIRE(c);
  CHECK(harness.policy().stats().reserved == 1_KiB + 2_KiB + 512);
  harness.free(*c);
  harness.policy().release_cached();  // c's segment is empty, the first is not
  CHECK(harness.policy().stats().reserved == 1_KiB);
  harness.finish();
}

TEST_CASE("bestfit rejects bad options with the reason", "[bestfit]") {
  SimDevice device(plain_device(1_MiB));
  CHECK_THROWS_WITH(make_policy("bestfit:alignment=300", device), Catch::Contains("power of two"));
  CHECK_THROWS_WITH(make_policy("bestfit:region=1000", device), Catch::Contains("multiple of the alignment"));
  CHECK_THROWS_WITH(make_policy("bestfit:size=1", device), Catch::Contains("valid keys: region=0, alignment=256, grow=0"));
}

}  // namespace
}  // namespace allocsim::test

namespace allocsim::test {
namespace {

// One layout worked on paper for every fit: a 4 KiB region; a (512) b (1 KiB) c (256)
// d (1 KiB) e (256) fill [0, 3 KiB); b and d are freed. Free: [512, 1536) of 1 KiB,
// [1792, 2816) of 1 KiB, and the tail [3 KiB, 4 KiB) of 1 KiB.
struct Layout {
  explicit Layout(const std::string& policy) : harness(policy, plain_device(4_KiB)) {
    a = *harness.alloc(512);
    const Block b = *harness.alloc(1_KiB);
    harness.alloc(256);
    const Block d = *harness.alloc(1_KiB);
    harness.alloc(256);
    harness.free(b);
    harness.free(d);
  }
  Addr offset(const Block& block) const { return block.addr - a.addr; }
  Harness harness;
  Block a{};
};

TEST_CASE("firstfit takes the lowest-addressed range that fits", "[placement]") {
  Layout layout("firstfit");
  CHECK(layout.offset(*layout.harness.alloc(768)) == 512);
  CHECK(layout.offset(*layout.harness.alloc(512)) == 1792);  // 256 left at 1280 is too small
  layout.harness.finish();
}

TEST_CASE("nextfit goes on from where the last block ended, wrapping around", "[placement]") {
  Layout layout("nextfit");
  // The last block (e) ended at 3 KiB: the search starts there, at the tail.
  CHECK(layout.offset(*layout.harness.alloc(256)) == 3_KiB);
  CHECK(layout.offset(*layout.harness.alloc(1_KiB - 256)) == 3_KiB + 256);  // the rest of the tail
  CHECK(layout.offset(*layout.harness.alloc(256)) == 512);  // nothing after: wrap to the lowest
  layout.harness.finish();
}

TEST_CASE("worstfit takes the largest range, the lowest address among equals", "[placement]") {
  Layout layout("worstfit");
  CHECK(layout.offset(*layout.harness.alloc(256)) == 512);   // three ranges of 1 KiB: the lowest
  CHECK(layout.offset(*layout.harness.alloc(256)) == 1792);  // now [768, 1536) is smaller
  layout.harness.finish();
}

TEST_CASE("bestfit takes the smallest range that fits", "[placement]") {
  Layout layout("bestfit");
  const Block first = *layout.harness.alloc(768);  // all three ranges are 1 KiB: the lowest
  CHECK(layout.offset(first) == 512);
  CHECK(layout.offset(*layout.harness.alloc(256)) == 1280);  // the 256 left over is the best fit
  layout.harness.finish();
}

}  // namespace
}  // namespace allocsim::test

namespace allocsim::test {
namespace {

// bestfit and worstfit run on TiledSegments (boundary tags); SegmentPool's address-ordered
// free list serves the same fits too. The two must place every block alike, on random
// traces, in one region and growing, on a roomy and a tight device, with releases.
TEST_CASE("bestfit and worstfit place every block alike on either index of free space", "[placement]") {
  const std::string spec = GENERATE("bestfit", "worstfit", "bestfit:grow=8MiB", "worstfit:grow=4MiB,alignment=1KiB");
  const Bytes capacity = GENERATE(1_GiB, 96_MiB);
  CAPTURE(spec, capacity);
  RandomTraceOptions options;
  options.events = 20'000;
  options.seed = 5;
  options.max_bytes = 8_MiB;
  options.target_live = 80_MiB;
  const Trace trace = make_random_trace(options, "random");
  const Spec parsed = parse_spec(spec);
  const Fit fit = parsed.name == "bestfit" ? Fit::best : Fit::worst;
  const PlacementSettings settings = placement_settings(Params(parsed, kPlacementParams, "policy " + parsed.name));
  SimDevice tiled_device(plain_device(capacity));
  SimDevice listed_device(plain_device(capacity));
  SizeFitPolicy tiled(fit, settings, tiled_device);
  AddressFitPolicy listed(fit, settings, listed_device);
  std::vector<std::optional<Block>> blocks(trace.allocations());
  std::size_t refused = 0;
  for (std::size_t i = 0; i < trace.events.size(); ++i) {
    const Event& event = trace.events[i];
    INFO("event " << i);
    if (event.op == Op::alloc) {
      const Request request{event.id, trace.bytes_of(event.id), event.stream, event.time};
      const Allocation a = tiled.allocate(request);
      const Allocation b = listed.allocate(request);
      REQUIRE(a.block.has_value() == b.block.has_value());
      if (a.block) {
        REQUIRE(a.block->addr == b.block->addr);
        REQUIRE(a.block->size == b.block->size);
      }
      refused += a.block ? 0 : 1;
      blocks[index_of(event.id)] = a.block;
    } else if (event.op == Op::free && blocks[index_of(event.id)]) {
      tiled.deallocate(*blocks[index_of(event.id)], event.time);
      listed.deallocate(*blocks[index_of(event.id)], event.time);
    }
    if (i % 5000 == 4999) {  // now and then, empty segments go back
      tiled.release_cached();
      listed.release_cached();
    }
    if (i % 97 == 0) {
      tiled.check();
      REQUIRE(tiled.stats().reserved == listed.stats().reserved);
      REQUIRE(tiled.stats().largest_free == listed.stats().largest_free);
      REQUIRE(tiled.inspect(Detail::counters).releasable == listed.inspect(Detail::counters).releasable);
    }
  }
  if (capacity == 96_MiB) CHECK(refused > 0);  // the tight device runs out
  tiled.check();
  listed.check();
}

TEST_CASE("the size-ordered index refuses the fits that search by address", "[placement]") {
  SimDevice device(plain_device(1_MiB));
  const PlacementSettings settings = placement_settings(Params(Spec{"firstfit", {}}, kPlacementParams, "policy firstfit"));
  CHECK_THROWS_WITH(SizeFitPolicy(Fit::first, settings, device), Catch::Contains("searches by address"));
}

}  // namespace
}  // namespace allocsim::test
