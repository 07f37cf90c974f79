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

// Lemire's test and sum for a little-endian word of eight ASCII digits (the first in the
// lowest byte), three multiplications instead of eight dependent steps.
constexpr bool eight_digits(std::uint64_t word) {
  return ((word & 0xf0f0'f0f0'f0f0'f0f0ULL) | (((word + 0x0606'0606'0606'0606ULL) & 0xf0f0'f0f0'f0f0'f0f0ULL) >> 4)) ==
         0x3333'3333'3333'3333ULL;
}
constexpr std::uint64_t eight_digits_value(std::uint64_t word) {
  word -= 0x3030'3030'3030'3030ULL;
  word = word * 10 + (word >> 8);
  return ((word & 0x0000'00ff'0000'00ffULL) * (100 + (1'000'000ULL << 32)) +
          ((word >> 16) & 0x0000'00ff'0000'00ffULL) * (1 + (10'000ULL << 32))) >>
         32;
}

// The word of the `length` (1-8) bytes at `at`, moved up so that '0's fill the bytes before
// them: "42" reads as "00000042". Reads eight bytes from `at`.
inline std::uint64_t digits_word(const char* at, std::size_t length) {
  std::uint64_t word = 0;
  std::memcpy(&word, at, 8);
  if constexpr (std::endian::native == std::endian::big) word = __builtin_bswap64(word);
  const auto shift = static_cast<unsigned>(8 * (8 - length));
  return shift == 0 ? word : word << shift | 0x3030'3030'3030'3030ULL >> (64 - shift);
}

}  // namespace detail

// The value of a field of 1 to 16 decimal digits, eight at a time; nullopt for anything
// else (empty, a sign, a space, more digits), which the caller's full parser then judges.
// `readable_end` as for split_csv_fields: eight bytes from the field's start are read.
inline std::optional<std::uint64_t> csv_digits(std::string_view field, const char* readable_end) {
  const std::size_t length = field.size();
  if (length == 0 || length > 16 || readable_end - field.data() < 8) return std::nullopt;
  if (length <= 8) {
    const std::uint64_t word = detail::digits_word(field.data(), length);
    if (!detail::eight_digits(word)) return std::nullopt;
    return detail::eight_digits_value(word);
  }
  const std::uint64_t high = detail::digits_word(field.data(), length - 8);
  const std::uint64_t low = detail::digits_word(field.data() + length - 8, 8);
  if (!detail::eight_digits(high) || !detail::eight_digits(low)) return std::nullopt;
  return detail::eight_digits_value(high) * 100'000'000 + detail::eight_digits_value(low);
}

}  // namespace allocsim
