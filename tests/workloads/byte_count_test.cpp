#include <algorithm>
#include <cstddef>
#include <random>
#include <string>
#include <string_view>

#include <catch2/catch.hpp>

#include "workloads/byte_count.hpp"

namespace allocsim {
namespace {

std::size_t plain_count(std::string_view text, char byte) {
  return static_cast<std::size_t>(std::count(text.begin(), text.end(), byte));
}

TEST_CASE("count_byte counts as std::count does, at every length and start, and past its counters' 255 steps",
          "[byte_count]") {
  std::mt19937 random(7);
  std::string text(9000, '\0');
  for (char& c : text) c = "\n,a\xff"[random() % 4];
  for (std::size_t start = 0; start < 17; ++start) {
    for (std::size_t length = 0; start + length <= text.size(); length += length < 70 ? 1 : 331) {
      const std::string_view part = std::string_view(text).substr(start, length);
      for (const char byte : {'\n', '\xff', 'z'}) {
        INFO("start " << start << ", length " << length << ", byte " << static_cast<int>(byte));
        REQUIRE(count_byte(part, byte) == plain_count(part, byte));
      }
    }
  }
  // Every byte a match: each 16-byte step adds 1 to all 16 counters, which the sum takes
  // before 256 steps would wrap them.
  const std::string all(16 * 255 * 3 + 5, '\n');
  CHECK(count_byte(all, '\n') == all.size());
  CHECK(count_byte(all, ',') == 0);
}

}  // namespace
}  // namespace allocsim
