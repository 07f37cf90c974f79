#include <array>
#include <algorithm>
#include <charconv>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "workloads/csv_fields.hpp"

namespace allocsim {
namespace {

// The plain way: find each comma, trim each field.
std::vector<std::string_view> naive_split(std::string_view line) {
  std::vector<std::string_view> fields;
  while (true) {
    const auto comma = line.find(',');
    fields.push_back(trim_line(line.substr(0, comma)));
    if (comma == std::string_view::npos) return fields;
    line.remove_prefix(comma + 1);
  }
}

TEST_CASE("splitting a CSV line eight bytes at a time agrees with the plain way", "[csv]") {
  std::mt19937_64 rng(3);
  const std::string alphabet = "a,b ,\t0123456789,,x\r,-";
  for (int round = 0; round < 20'000; ++round) {
    // The line sits at the very end of its buffer half the time: no read may pass it.
    std::string buffer(rng() % 40, ',');
    for (char& c : buffer) c = alphabet[rng() % alphabet.size()];
    const std::size_t tail = rng() % 2 ? 0 : rng() % 9;
    const std::string_view line(buffer.data(), buffer.size() - std::min(tail, buffer.size()));
    const std::vector<std::string_view> expected = naive_split(line);
    std::array<std::string_view, 8> fields{};
    const std::size_t count = split_csv_fields(line, buffer.data() + buffer.size(), fields);
    REQUIRE(count == expected.size());
    for (std::size_t i = 0; i < std::min(count, fields.size()); ++i) REQUIRE(fields[i] == expected[i]);
  }
  const std::string_view three = "a, b,c";  // more fields than room: counted, two stored
  std::array<std::string_view, 2> two{};
  CHECK(split_csv_fields(three, three.data() + three.size(), two) == 3);
  CHECK(two[1] == "b");
}

TEST_CASE("digits eight at a time agree with from_chars, and refuse what is not plain digits", "[csv]") {
  std::mt19937_64 rng(5);
  for (int round = 0; round < 100'000; ++round) {
    const std::size_t length = 1 + rng() % 16;
    std::string text;
    for (std::size_t i = 0; i < length; ++i) text += static_cast<char>('0' + rng() % 10);
    if (rng() % 4 == 0) text[rng() % length] = "/:a -+\x80"[rng() % 7];  // one byte next to the digits
    const std::string buffer = text + "9,12345678";  // bytes after the field are read, never used
    const std::optional<std::uint64_t> fast = csv_digits(std::string_view(buffer.data(), length), buffer.data() + buffer.size());
    std::uint64_t value = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (error == std::errc{} && end == text.data() + text.size()) {
      REQUIRE(fast == value);
    } else {
      REQUIRE_FALSE(fast);
    }
  }
  const std::string near_end = "12";  // under eight readable bytes: the caller's parser takes it
  CHECK_FALSE(csv_digits(near_end, near_end.data() + near_end.size()));
  CHECK_FALSE(csv_digits("", nullptr));
  const std::string seventeen = "12345678901234567,,,,,,,,";
  CHECK_FALSE(csv_digits(std::string_view(seventeen.data(), 17), seventeen.data() + seventeen.size()));
  const std::string sixteen = "9999999999999999,,,,,,,,";
  CHECK(csv_digits(std::string_view(sixteen.data(), 16), sixteen.data() + sixteen.size()) == 9'999'999'999'999'999ULL);
}

// digits_value subtracts '0' from a whole word at once: a byte below '0' borrows from the
// byte after it, which may then pass for a digit (':' less the borrow reads as 9). The
// byte that borrowed must still be refused, whatever follows it.
TEST_CASE("digits refuse every byte that is not a digit, at any place, whatever follows it", "[csv]") {
  int refused = 0;
  for (std::size_t length = 1; length <= 16; ++length) {
    for (std::size_t at = 0; at < length; ++at) {
      for (int byte = 0; byte < 256; ++byte) {
        if (byte >= '0' && byte <= '9') continue;
        for (const char after : {'0', '9', ':', '/', static_cast<char>(byte)}) {
          std::string buffer(length, '5');
          buffer[at] = static_cast<char>(byte);
          if (at + 1 < length) buffer[at + 1] = after;
          buffer += "00000000";  // read past the field, never used
          std::uint64_t value = 0;
          REQUIRE_FALSE(digits_value(buffer.data(), length, value));
          ++refused;
        }
      }
    }
  }
  CHECK(refused == 136 * 246 * 5);
  std::uint64_t value = 0;
  const std::string zeros = "0000000000000000";
  CHECK(digits_value(zeros.data(), 16, value));
  CHECK(value == 0);
  CHECK(digits_value("90000000", 1, value));
  CHECK(value == 9);
}

}  // namespace
}  // namespace allocsim
