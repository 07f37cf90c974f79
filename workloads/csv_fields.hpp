// Splitting one CSV line at its commas, for readers that parse millions of rows: no heap
// allocation, and eight bytes looked at per step (a comma's position is a bit in a mask, so
// fields of any length cost no mispredicted branch per byte). No quoting: our trace CSV and
// RMM's logs have none.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <string_view>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "workloads/text_lines.hpp"

namespace allocsim {

// One bit (the top one) set in each byte of `word` that is a comma.
constexpr std::uint64_t comma_bytes(std::uint64_t word) {
  constexpr std::uint64_t kCommas = 0x2c2c'2c2c'2c2c'2c2cULL;
  constexpr std::uint64_t kLow7 = 0x7f7f'7f7f'7f7f'7f7fULL;
  const std::uint64_t zero_if_comma = word ^ kCommas;
  // Exact per byte (no borrow crosses bytes): the top bit is clear only where the byte is 0.
  return ~(((zero_if_comma & kLow7) + kLow7) | zero_if_comma | kLow7);
}

// Splits `line` at commas into `fields`, each trimmed as trim_line() does, and returns how
// many fields the line has: at most fields.size() are stored, a longer line is counted.
// `readable_end` bounds what may be read (the end of the buffer holding the line): words
// are read past the line's end, never past readable_end.
inline std::size_t split_csv_fields(std::string_view line, const char* readable_end,
                                    std::span<std::string_view> fields) {
  const char* const end = line.data() + line.size();
  const char* start = line.data();
  std::size_t count = 0;
  const auto add = [&](const char* field_end) {
    if (count < fields.size()) {
      fields[count] = trim_line(std::string_view(start, static_cast<std::size_t>(field_end - start)));
    }
    ++count;
  };
  for (const char* word = line.data(); word < end; word += 8) {
    std::uint64_t bytes = 0;
    if (const auto readable = static_cast<std::size_t>(readable_end - word); readable >= 8) {
      std::memcpy(&bytes, word, 8);
    } else {
      std::memcpy(&bytes, word, readable);  // the buffer's last word
    }
    if constexpr (std::endian::native == std::endian::big) bytes = __builtin_bswap64(bytes);
    std::uint64_t commas = comma_bytes(bytes);
    if (const auto in_line = static_cast<std::size_t>(end - word); in_line < 8) {
      commas &= (std::uint64_t{1} << (8 * in_line)) - 1;  // bytes past the line's end
    }
    for (; commas != 0; commas &= commas - 1) {
      const char* const comma = word + std::countr_zero(commas) / 8;
      add(comma);
      start = comma + 1;
    }
  }
  add(end);
  return count;
}

namespace detail {

// The `length` (1-8) bytes at `at`, each less '0', moved up so that zeros fill the bytes
// before them: "42" reads as the digits 0,0,0,0,0,0,4,2, the first in the lowest byte.
// Reads eight bytes from `at`. A byte below '0' borrows from the byte after it, which is
// either moved out or, being past a byte that is not a digit, judged already.
inline std::uint64_t digit_bytes(const char* at, std::size_t length) {
  std::uint64_t word = 0;
  std::memcpy(&word, at, 8);
  if constexpr (std::endian::native == std::endian::big) word = __builtin_bswap64(word);
  return (word - 0x3030'3030'3030'3030ULL) << (8 * (8 - length));
}

// The top bit of each byte of digit_bytes' word that is not 0-9: adding 0x76 sets it in a
// byte over 9, and one already set (a byte below '0') shows as it is.
constexpr std::uint64_t not_digits(std::uint64_t digits) {
  return ((digits + 0x7676'7676'7676'7676ULL) | digits) & 0x8080'8080'8080'8080ULL;
}

// Lemire's sum of a word of eight digits (the first in the lowest byte): three
// multiplications instead of eight dependent steps.
constexpr std::uint64_t digits_sum(std::uint64_t digits) {
  digits = digits * 10 + (digits >> 8);
  return ((digits & 0x0000'00ff'0000'00ffULL) * (100 + (1'000'000ULL << 32)) +
          ((digits >> 16) & 0x0000'00ff'0000'00ffULL) * (1 + (10'000ULL << 32))) >>
         32;
}

#if defined(__SSE2__) && defined(__x86_64__)
// digits_sum(high) * 10^8 + digits_sum(low) in one vector: pairs, then fours, then eights
// of digits, each step one multiply-add over every lane. For the 9-16 digits of a time in
// nanoseconds: 17 instructions a row fewer than two digits_sum in bench/'s CSV parse.
inline std::uint64_t sixteen_digits_sum(std::uint64_t high, std::uint64_t low) {
  const __m128i digits = _mm_set_epi64x(static_cast<long long>(low), static_cast<long long>(high));
  const __m128i firsts = _mm_and_si128(digits, _mm_set1_epi16(0x00ff));  // the first digit of each pair
  const __m128i pairs = _mm_add_epi16(_mm_mullo_epi16(firsts, _mm_set1_epi16(10)), _mm_srli_epi16(digits, 8));
  const __m128i fours = _mm_madd_epi16(pairs, _mm_set1_epi32(100 | 1 << 16));
  const __m128i eights = _mm_madd_epi16(_mm_packs_epi32(fours, fours), _mm_set1_epi32(10'000 | 1 << 16));
  const auto both = static_cast<std::uint64_t>(_mm_cvtsi128_si64(eights));  // high's eight, then low's
  return (both & 0xffff'ffffULL) * 100'000'000 + (both >> 32);
}
#else
inline std::uint64_t sixteen_digits_sum(std::uint64_t high, std::uint64_t low) {
  return digits_sum(high) * 100'000'000 + digits_sum(low);
}
#endif

}  // namespace detail

// The value of the `length` (1 to 16) ASCII digits at `at`, in `value`; false (value
// undefined) for any other length or a byte that is not a digit. Reads eight bytes from
// `at`, and to at + length for more than eight digits: the caller keeps them readable.
// The checks are combined without branches, so a row of fields of varying length costs
// no mispredicted branch beyond the one on more than eight digits.
[[gnu::always_inline]] inline bool digits_value(const char* at, std::size_t length, std::uint64_t& value) {
  if (length - 1 >= 16) return false;  // 0 wraps round
  if (length <= 8) {
    const std::uint64_t digits = detail::digit_bytes(at, length);
    value = detail::digits_sum(digits);
    return detail::not_digits(digits) == 0;
  }
  const std::uint64_t high = detail::digit_bytes(at, length - 8);
  const std::uint64_t low = detail::digit_bytes(at + length - 8, 8);
  value = detail::sixteen_digits_sum(high, low);
  return (detail::not_digits(high) | detail::not_digits(low)) == 0;
}

// The value of a field of 1 to 16 decimal digits, eight at a time; nullopt for anything
// else (empty, a sign, a space, more digits), which the caller's full parser then judges.
// `readable_end` as for split_csv_fields: eight bytes from the field's start are read.
inline std::optional<std::uint64_t> csv_digits(std::string_view field, const char* readable_end) {
  std::uint64_t value = 0;
  if (readable_end - field.data() < 8 || !digits_value(field.data(), field.size(), value)) return std::nullopt;
  return value;
}

}  // namespace allocsim
