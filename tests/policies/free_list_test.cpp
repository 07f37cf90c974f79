#include <catch2/catch.hpp>

#include "policies/common/free_list.hpp"
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

}  // namespace
}  // namespace allocsim
