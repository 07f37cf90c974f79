#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "sim/float_chars.hpp"

namespace allocsim {
namespace {

// The portable versions are what the wasm build runs; here, beside the std ones they
// stand in for, every value must give the same text and every text the same value.
std::vector<double> sample_values() {
  std::vector<double> values{0.0, -0.0, 1, -1, 0.1, 0.5, 0.3, 2.0 / 3, 1e5, 1e-5, 1e-7, 123456, 1234.5678, 100, 1e6, 1e15,
                             1e16, 1e17, 1e21, 1e22, 1e23, 0x1p53, 0x1p53 + 2, 0x1p60, 123456789012345678.0,
                             12345678901234567890.0, 1.5e300, 5e-324, 2.2250738585072014e-308,
                             std::numeric_limits<double>::max(), std::numeric_limits<double>::infinity(),
                             -std::numeric_limits<double>::infinity()};
  std::mt19937_64 random(44);
  for (int i = 0; i < 20000; ++i) {
    const std::uint64_t bits = random();
    double value = 0;
    std::memcpy(&value, &bits, sizeof value);
    if (!std::isnan(value)) values.push_back(value);
    values.push_back(std::ldexp(static_cast<double>(random() % 100000000), static_cast<int>(random() % 80) - 40));
    values.push_back(static_cast<double>(random() % 1000000) / static_cast<double>(1 + random() % 1000));
    values.push_back(std::round(static_cast<double>(random()) / static_cast<double>(std::uint64_t{1} << (random() % 64))));
  }
  return values;
}

TEST_CASE("the portable double formatting is std::to_chars's shortest round trip", "[float_chars]") {
  CHECK(portable::double_to_shortest(0.25) == "0.25");
  CHECK(portable::double_to_shortest(1e5) == "1e+05");
  CHECK(portable::double_to_shortest(123456) == "123456");
  CHECK(portable::double_to_shortest(-0.0) == "-0");
  std::size_t differences = 0;
  for (const double value : sample_values()) {
    const std::string expected = double_to_shortest(value);
    const std::string got = portable::double_to_shortest(value);
    if (got != expected && ++differences <= 10) FAIL_CHECK(expected << " printed as " << got);
  }
  CHECK(differences == 0);
}

TEST_CASE("the portable double parsing is std::from_chars's", "[float_chars]") {
  std::vector<std::string> texts{"", "-", "+1", " 1", "1.5", ".5", "5.", ".", "1e", "1e+", "1e5x", "0x10", "-0x1p3",
                                 "inf", "-infinity", "nan", "NaN", "1e400", "-1e400", "1e-400", "4e-320", "2.5s",
                                 "0.8", "abc", "00012", "1e-5ms", "-.5", "--1", "1,5"};
  for (const double value : sample_values()) texts.push_back(double_to_shortest(value));
  for (const std::string& text : texts) {
    double expected = 7;
    double got = 7;
    const char* end = text.data() + text.size();
    const auto want = double_from_chars(text.data(), end, expected);
    const auto have = portable::double_from_chars(text.data(), end, got);
    INFO("'" << text << "'");
    REQUIRE(have.ec == want.ec);
    REQUIRE(have.ptr == want.ptr);
    REQUIRE((std::memcmp(&got, &expected, sizeof got) == 0 || (std::isnan(got) && std::isnan(expected))));
  }
}

}  // namespace
}  // namespace allocsim
