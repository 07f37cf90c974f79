#include <catch2/catch.hpp>

#include <vector>

#include "policies/common/free_list.hpp"
#include "sim/rng.hpp"
#include "sim/error.hpp"

namespace allocsim {
namespace {

TEST_CASE("free list merges a range with both neighbours and with neither when apart", "[free_list]") {
  FreeList list;
  list.add({1000, 100});
  list.add({1200, 100});
  CHECK(list.count() == 2);
  list.add({1100, 100});  // touches both
  CHECK(list.count() == 1);
  CHECK(list.best_fit(1) == Range{1000, 300});
  list.add({1301, 10});  // one byte apart: stays separate
  CHECK(list.count() == 2);
  CHECK(list.total() == 310);
  CHECK(list.largest() == 300);
  list.check();
}

TEST_CASE("free list never merges across a boundary of keep_apart_at, on either side", "[free_list]") {
  std::vector<Addr> starts{1000, 2000};  // two touching segments: [1000, 2000), [2000, 3000)
  FreeList list;
  list.keep_apart_at(&starts);
  list.add({1900, 100});
  list.add({2000, 100});  // starts at a boundary: stays apart from the range ending there
  CHECK(list.count() == 2);
  list.add({1800, 100});  // inside the first segment: merges
  CHECK(list.best_fit(1) == Range{2000, 100});
  CHECK(list.best_fit(101) == Range{1800, 200});
  list.remove({2000, 100});
  list.add({2100, 100});
  list.add({2000, 100});  // merges with what follows it, still not with what ends at 2000
  CHECK(list.count() == 2);
  CHECK(list.contains({2000, 200}));
  CHECK(list.contains({1800, 200}));
  CHECK_FALSE(list.contains({1800, 100}));
  list.check();  // touching at a boundary is no error
  starts = {1000};
  CHECK_THROWS_WITH(list.check(), Catch::Contains("touches"));  // without it, the two should have merged

  FreeList plain;  // the same ranges without boundaries merge into one
  plain.add({1800, 200});
  plain.add({2000, 200});
  CHECK(plain.count() == 1);
  CHECK(plain.contains({1800, 400}));
  plain.check();
}

TEST_CASE("free list best fit takes the smallest range, then the lowest address", "[free_list]") {
  FreeList list;
  list.add({0, 512});
  list.add({1024, 256});
  list.add({2048, 256});
  list.add({4096, 1024});
  CHECK(list.best_fit(256) == Range{1024, 256});
  CHECK(list.best_fit(257) == Range{0, 512});
  CHECK(list.best_fit(513) == Range{4096, 1024});
  CHECK_FALSE(list.best_fit(1025));
  list.remove({1024, 256});
  CHECK(list.best_fit(256) == Range{2048, 256});
  CHECK_THROWS_AS(list.remove({2048, 255}), Error);
  list.check();
}

TEST_CASE("free list take_front keeps the rest of the range free in place", "[free_list]") {
  FreeList list;
  list.add({0, 1024});
  list.add({2048, 512});
  list.take_front({0, 1024}, 256);
  CHECK(list.best_fit(768) == Range{256, 768});
  CHECK(list.total() == 1280);
  list.take_front({2048, 512}, 512);  // all of it
  CHECK(list.count() == 1);
  CHECK_THROWS_AS(list.take_front({256, 768}, 769), Error);
  CHECK_THROWS_AS(list.take_front({0, 1024}, 1), Error);
  list.add({0, 256});  // merges back with its old remainder
  CHECK(list.best_fit(1) == Range{0, 1024});
  list.check();
}

// take_best_fit (first, next, worst) is best_fit (first_fit, next_fit, worst_fit) then take_front in one: a
// twin list driven the long way ends with the same ranges after every step, and both
// refuse a size nothing fits. A list kept in address order only takes the same first and
// next fits, and knows the same largest range.
TEST_CASE("free list take_best_fit, take_first_fit, take_next_fit, take_worst_fit take what the fit and take_front would", "[free_list]") {
  const int kind = GENERATE(0, 1, 2, 3, 4, 5);  // best, first, next, worst; first, next in address order only
  const bool address_only = kind >= 4;
  const int fit = address_only ? kind - 3 : kind;
  Rng rng(GENERATE(1, 2));
  FreeList fast(address_only ? FreeList::Orders::address : FreeList::Orders::address_and_size);
  FreeList slow;
  std::vector<Range> taken;
  for (Addr at = 0; at < 64; ++at) {
    const Range range{at * 4096, 256 * (1 + rng.below(15))};  // apart: no two touch
    fast.add(range);
    slow.add(range);
  }
  for (int step = 0; step < 5'000; ++step) {
    if (taken.empty() || rng.below(2) == 0) {
      const Bytes size = 256 * (1 + rng.below(16));
      const Addr from = rng.below(64 * 4096);
      const std::optional<Range> expected =
          fit == 0   ? slow.best_fit(size)
          : fit == 1 ? slow.first_fit(size)
          : fit == 2 ? slow.next_fit(size, from)
                     : slow.worst_fit(size);
      REQUIRE((fit == 0   ? fast.take_best_fit(size)
               : fit == 1 ? fast.take_first_fit(size)
               : fit == 2 ? fast.take_next_fit(size, from)
                          : fast.take_worst_fit(size)) == expected);
      if (!expected) continue;
      slow.take_front(*expected, size);
      taken.push_back(Range{expected->addr, size});
    } else {
      const std::size_t pick = rng.below(taken.size());
      fast.add(taken[pick]);
      slow.add(taken[pick]);
      taken.erase(taken.begin() + static_cast<std::ptrdiff_t>(pick));
    }
    REQUIRE(fast.total() == slow.total());
    REQUIRE(fast.count() == slow.count());
    REQUIRE(fast.largest() == slow.largest());
  }
  fast.check();
  std::vector<Range> fast_ranges;
  std::vector<Range> slow_ranges;
  fast.for_each([&](Range range) { fast_ranges.push_back(range); });
  slow.for_each([&](Range range) { slow_ranges.push_back(range); });
  CHECK(fast_ranges == slow_ranges);
  CHECK_FALSE(fast.take_first_fit(1 << 30).has_value());
  CHECK_FALSE(fast.take_next_fit(1 << 30, 4096).has_value());
  if (!address_only) {
    CHECK_FALSE(fast.take_best_fit(1 << 30).has_value());
    CHECK_FALSE(fast.take_worst_fit(1 << 30).has_value());
  }
}

// Best and worst fit need the size order: a list without it refuses them rather than
// answer wrong, and takes nothing.
TEST_CASE("free list in address order only refuses best and worst fit", "[free_list]") {
  FreeList list(FreeList::Orders::address);
  list.add(Range{0, 4096});
  list.add(Range{8192, 1024});
  CHECK(list.largest() == 4096);
  CHECK(list.first_fit(2048) == Range{0, 4096});
  CHECK_THROWS_WITH(list.best_fit(256), Catch::Contains("needs the size order"));
  CHECK_THROWS_WITH(list.take_best_fit(256), Catch::Contains("needs the size order"));
  CHECK_THROWS_WITH(list.worst_fit(256), Catch::Contains("needs the size order"));
  CHECK_THROWS_WITH(list.take_worst_fit(256), Catch::Contains("needs the size order"));
  CHECK(list.total() == 5120);
  CHECK(list.count() == 2);
  list.check();
}
}  // namespace
}  // namespace allocsim
