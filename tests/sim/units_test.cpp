#include <catch2/catch.hpp>

#include "sim/error.hpp"
#include "sim/units.hpp"

namespace allocsim {
namespace {

TEST_CASE("sizes parse in binary and SI units", "[units]") {
  CHECK(parse_bytes("4096") == 4096);
  CHECK(parse_bytes("512MiB") == 512_MiB);
  CHECK(parse_bytes("16GiB") == 16_GiB);
  CHECK(parse_bytes("16gib") == 16_GiB);
  CHECK(parse_bytes("2 MiB") == 2_MiB);
  CHECK(parse_bytes("1.5GB") == 1'500'000'000);
  CHECK(parse_bytes("1.5GiB") == 1536_MiB);
  CHECK(parse_bytes("0.5KiB") == 512);
  CHECK(parse_bytes("1TiB") == 1024_GiB);
  CHECK(parse_bytes("7B") == 7);
  CHECK(parse_bytes("18446744073709551615") == ~Bytes{0});
}

TEST_CASE("a decimal with a unit rounds down to a whole byte, computed exactly", "[units]") {
  // 51.6 GiB = 516 * 2^30 / 10 = 55405078118.4 B: floor.
  CHECK(parse_bytes("51.6GiB") == 55'405'078'118);
  CHECK(parse_bytes("51.6 gib") == 55'405'078'118);
  // 0.1 GiB = 107374182.4 B.
  CHECK(parse_bytes("0.1GiB") == 107'374'182);
  CHECK(parse_bytes("79.15GiB") == 84'986'665'369);  // 7915 * 2^30 / 100 = 84986665369.6
  CHECK(parse_bytes("0.3KiB") == 307);               // 307.2
  CHECK(parse_bytes("0.999KiB") == 1022);            // 1022.976: down, never up
  CHECK(parse_bytes("1.0000000001GB") == 1'000'000'000);
  CHECK(parse_bytes("1.5MB") == 1'500'000);          // SI: whole already
  CHECK(parse_bytes("0.0000000000000000001TiB") == 0);
  // 19 decimals are the most; each digit is taken exactly.
  CHECK(parse_bytes("1.9999999999999999999GiB") == 2_GiB - 1);
  CHECK_THROWS_WITH(parse_bytes("1.00000000000000000001GiB"), Catch::Contains("too many decimals"));
  CHECK_THROWS_WITH(parse_bytes("17179869184.5GiB"), Catch::Contains("too large"));
  CHECK(parse_bytes("17179869183.999999GiB") == (Bytes{17179869183} << 30) + 1_GiB - 1'074);
}

TEST_CASE("bad sizes are errors that quote the text", "[units]") {
  CHECK_THROWS_WITH(parse_bytes("12XB"), Catch::Contains("'12XB'") && Catch::Contains("unknown unit"));
  CHECK_THROWS_WITH(parse_bytes(""), Catch::Contains("no number"));
  CHECK_THROWS_WITH(parse_bytes("GiB"), Catch::Contains("no number"));
  CHECK_THROWS_WITH(parse_bytes("-5"), Catch::Contains("'-5': negative"));  // issue 14: not "no number"
  CHECK_THROWS_WITH(parse_bytes("-2GiB"), Catch::Contains("negative"));
  CHECK_THROWS_WITH(parse_unsigned("-5", "bytes '-5'"), "bytes '-5' is negative");
  CHECK_THROWS_WITH(parse_unsigned("18446744073709551616", "n"), Catch::StartsWith("n is too large"));
  CHECK_THROWS_WITH(parse_unsigned("5x", "n"), "n is not a non-negative integer");
  CHECK_THROWS_WITH(parse_unsigned("", "n"), "n is not a non-negative integer");
  CHECK(parse_unsigned("18446744073709551615", "n") == ~std::uint64_t{0});
  CHECK_THROWS_WITH(parse_bytes("0.3B"), Catch::Contains("not a whole number"));
  CHECK_THROWS_WITH(parse_bytes("12.5"), Catch::Contains("'12.5': not a whole number of bytes") &&
                                             Catch::Contains("a decimal needs a unit"));
  CHECK(parse_bytes("12.0") == 12);  // whole bytes written with a decimal point
  CHECK_THROWS_WITH(parse_bytes("-51.6GiB"), Catch::Contains("'-51.6GiB': negative"));
  CHECK_THROWS_WITH(parse_bytes("51.6XiB"), Catch::Contains("unknown unit 'XiB'"));
  CHECK_THROWS_WITH(parse_bytes(".GiB"), Catch::Contains("no number"));
  CHECK_THROWS_WITH(parse_bytes("18446744073709551616"), Catch::Contains("too large"));
  CHECK_THROWS_WITH(parse_bytes("17179869184GiB"), Catch::Contains("too large"));
  CHECK_THROWS_AS(parse_bytes("1.2.3"), Error);
}

TEST_CASE("sizes print in binary units, exact when they can be", "[units]") {
  CHECK(format_bytes(0) == "0 B");
  CHECK(format_bytes(1023) == "1023 B");
  CHECK(format_bytes(1024) == "1 KiB");
  CHECK(format_bytes(1536) == "1.50 KiB");
  CHECK(format_bytes(16_GiB) == "16 GiB");
  CHECK(format_bytes(1_GiB + 1) == "1.00 GiB");
  CHECK(format_bytes(1000_MiB + 1) == "1000 MiB");
  CHECK(format_nanos(999) == "999 ns");
  CHECK(format_nanos(1500) == "1.50 us");
  CHECK(format_nanos(2'000'000'000) == "2.00 s");
}

TEST_CASE("alignment helpers round to multiples", "[units]") {
  CHECK(align_up(0, 256) == 0);
  CHECK(align_up(1, 256) == 256);
  CHECK(align_up(256, 256) == 256);
  CHECK(align_up(257, 256) == 512);
  CHECK(align_up(5, 1) == 5);
  CHECK(align_down(511, 256) == 256);
  CHECK(align_up(~Bytes{0} - 5, 256) == ~Bytes{0});  // saturates instead of wrapping to a small size
}

TEST_CASE("align_up's power-of-two path rounds as the plain definition does, at both ends", "[units]") {
  const auto plain = [](Bytes value, Bytes alignment) {
    if (alignment <= 1 || value % alignment == 0) return value;
    const Bytes pad = alignment - value % alignment;
    return value > ~Bytes{0} - pad ? ~Bytes{0} : value + pad;
  };
  std::size_t compared = 0;
  for (const Bytes alignment : {Bytes{0}, Bytes{1}, Bytes{2}, Bytes{3}, Bytes{256}, Bytes{512}, Bytes{1000}, 2_MiB,
                                Bytes{1} << 63}) {
    for (const Bytes base : {Bytes{0}, alignment, ~Bytes{0} - 2 * alignment}) {
      for (Bytes delta = 0; delta < 2 * alignment + 3 && delta < 4099; ++delta) {
        const Bytes value = base + delta;
        if (value < base) break;  // past the top
        CHECK(align_up(value, alignment) == plain(value, alignment));
        ++compared;
      }
    }
    CHECK(align_up(~Bytes{0}, alignment) == ~Bytes{0});
  }
  CHECK(compared > 20000);
}

}  // namespace
}  // namespace allocsim

namespace allocsim {
namespace {

TEST_CASE("exact sizes say the bytes once when the short form already does", "[units]") {
  CHECK(format_bytes_exact(700) == "700 B");
  CHECK(format_bytes_exact(1_MiB) == "1 MiB (1048576 B)");
  CHECK(format_address(0x7f0000000000) == "0x7f0000000000");
  CHECK(format_address(0) == "0x0");
}

}  // namespace
}  // namespace allocsim
