// The boundary-tag index of bestfit, worstfit and vmm's small pages, on numbers worked by
// hand, and against FreeList (the address-ordered list) on random takes and gives.
#include <catch2/catch.hpp>

#include <map>
#include <optional>
#include <vector>

#include "policies/common/free_list.hpp"
#include "policies/common/tiled_ranges.hpp"
#include "sim/error.hpp"
#include "sim/rng.hpp"

namespace allocsim {
namespace {

constexpr AllocId id(std::uint32_t n) { return static_cast<AllocId>(n); }

Range take_best(TiledRanges& ranges, Bytes size, std::uint32_t n) {
  const SizeBins::Cursor fit = ranges.best_fit(size);
  REQUIRE(fit != SizeBins::end());
  return ranges.take(fit, size, id(n));
}

TEST_CASE("tiled ranges split the best fit and merge a freed block with free neighbours", "[tiled_ranges]") {
  TiledRanges ranges;
  ranges.add({1000, 300});  // [1000, 1300)
  ranges.add({2000, 100});  // [2000, 2100)
  CHECK(ranges.total() == 400);
  CHECK(ranges.largest() == 300);

  CHECK(take_best(ranges, 100, 0) == Range{2000, 100});  // the exact fit, taken whole
  CHECK(take_best(ranges, 100, 1) == Range{1000, 300});  // now [1000, 1100) live, [1100, 1300) free
  CHECK(take_best(ranges, 100, 2) == Range{1100, 200});  // [1100, 1200) live, [1200, 1300) free
  CHECK(ranges.count() == 1);
  CHECK(ranges.total() == 100);
  ranges.check("test", 100);

  CHECK(ranges.give(id(1), 1000) == Range{1000, 100});  // no free neighbour yet: [1000, 1100) alone
  CHECK(ranges.count() == 2);
  CHECK(ranges.give(id(2), 1100) == Range{1100, 100});  // joins both sides: [1000, 1300) again
  CHECK(ranges.count() == 1);
  CHECK(ranges.largest() == 300);
  ranges.check("test", 100);

  CHECK_THROWS_WITH(ranges.give(id(1), 1000), Catch::Contains("did not hand out"));  // given back already
  CHECK_THROWS_WITH(ranges.give(id(0), 2050), Catch::Contains("did not hand out"));  // not where it lies
  CHECK_THROWS_WITH(ranges.give(id(9), 2000), Catch::Contains("did not hand out"));  // never taken
  CHECK_THROWS_WITH(ranges.remove({2000, 100}), Catch::Contains("not a whole free range"));  // still live
  ranges.give(id(0), 2000);
  ranges.remove({2000, 100});
  ranges.remove({1000, 300});
  CHECK(ranges.count() == 0);
  CHECK(ranges.total() == 0);
  ranges.check("test", 100);
}

TEST_CASE("tiled ranges never merge two ranges that touch", "[tiled_ranges]") {
  TiledRanges ranges;
  ranges.add({0, 256});
  ranges.add({256, 256});  // touches the first, tiled on its own (two segments, two small pages)
  const Range first = take_best(ranges, 256, 0);
  const Range second = take_best(ranges, 256, 1);
  CHECK(first.addr == 0);  // equal sizes: the lowest address first
  CHECK(second.addr == 256);
  ranges.give(id(0), 0);
  ranges.give(id(1), 256);
  CHECK(ranges.count() == 2);
  CHECK(ranges.largest() == 256);
  std::map<Addr, Bytes> seen;
  ranges.for_each_range([&](Range range, Bytes live) {
    CHECK(live == 0);
    seen[range.addr] = range.size;
  });
  CHECK(seen == std::map<Addr, Bytes>{{0, 256}, {256, 256}});
  ranges.check("test", 256);
}

TEST_CASE("tiled ranges' worst fit takes the largest piece, the lowest address among equals", "[tiled_ranges]") {
  TiledRanges ranges;
  ranges.add({4096, 1024});
  ranges.add({0, 1024});
  ranges.add({8192, 512});
  CHECK(ranges.worst_fit(2048) == SizeBins::end());  // the largest is too small
  const SizeBins::Cursor fit = ranges.worst_fit(256);
  REQUIRE(fit != SizeBins::end());
  CHECK(ranges.take(fit, 256, id(0)) == Range{0, 1024});
  CHECK(ranges.take(ranges.worst_fit(256), 256, id(1)) == Range{4096, 1024});  // 1024 beats the 768 left at 256
  CHECK(ranges.largest() == 768);
  ranges.check("test", 256);
}

// The same takes and gives through both indexes: the same ranges every time.
TEST_CASE("tiled ranges place as FreeList's best and worst fit do, on random requests", "[tiled_ranges]") {
  const bool worst = GENERATE(false, true);
  CAPTURE(worst);
  Rng rng(17);
  TiledRanges tiled;
  FreeList listed;
  for (const Range range : {Range{0, 64_KiB}, Range{1_MiB, 256_KiB}, Range{4_MiB, 32_KiB}}) {
    tiled.add(range);
    listed.add(range);
  }
  std::vector<std::optional<Range>> live(2000);  // by id: the block
  std::size_t refused = 0;
  for (std::uint32_t n = 0; n < live.size(); ++n) {
    // A random earlier block freed at each step (when it is still live): the ranges fill,
    // and holes of every size form between live blocks.
    if (const auto k = static_cast<std::uint32_t>(rng.below(n + 1)); live[k]) {
      REQUIRE(tiled.give(id(k), live[k]->addr) == *live[k]);
      listed.add(*live[k]);
      live[k].reset();
    }
    const Bytes size = 256 * (1 + rng.below(40));
    const std::optional<Range> expected = worst ? listed.take_worst_fit(size) : listed.take_best_fit(size);
    const SizeBins::Cursor fit = worst ? tiled.worst_fit(size) : tiled.best_fit(size);
    REQUIRE((fit != SizeBins::end()) == expected.has_value());
    if (!expected) {
      ++refused;
      continue;
    }
    REQUIRE(tiled.take(fit, size, id(n)) == *expected);
    live[n] = Range{expected->addr, size};
    REQUIRE(tiled.total() == listed.total());
    REQUIRE(tiled.largest() == listed.largest());
    REQUIRE(tiled.count() == listed.count());
  }
  CHECK(refused > 100);  // the ranges filled up, many times
  CHECK(refused < 1900);
  tiled.check("test", 256);
  listed.check();
}

}  // namespace
}  // namespace allocsim
