#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "policies/common/flat_search.hpp"
#include "sim/rng.hpp"

namespace allocsim {
namespace {

// Every length from empty to a few hundred, with runs of equal values, every key from
// below the first to past the last: the index std::lower_bound gives.
TEST_CASE("flat_lower_bound finds what std::lower_bound finds", "[flat_search]") {
  Rng rng(7);
  for (std::size_t n = 0; n < 300; ++n) {
    std::vector<std::uint64_t> values(n);
    for (std::uint64_t& value : values) value = rng.below(n / 2 + 1) * 2;  // even: odd keys fall between
    std::sort(values.begin(), values.end());
    for (std::uint64_t key = 0; key <= n + 2; ++key) {
      const auto expected = static_cast<std::size_t>(std::lower_bound(values.begin(), values.end(), key) - values.begin());
      REQUIRE(flat_lower_bound(values.data(), n, [&](std::uint64_t v) { return v < key; }) == expected);
    }
  }
}

}  // namespace
}  // namespace allocsim
