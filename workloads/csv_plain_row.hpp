// The rows of our own trace CSV as write_csv_trace writes them (time_ns,op,id,bytes,stream,
// tag, plain digits, no spaces), parsed in one pass: the line's commas and its newline are
// found at once, as the bits of two masks (16 bytes per compare with SSE2, eight with plain
// words elsewhere), and each field is cut at them. Splitting field by field is a chain of
// dependent loads; this is one load per 16 bytes, all independent.
// A line of any other shape (a space, a CR, a quote, a field too long, a release or sync
// row, no newline within kPlainRowReach bytes) is refused, not judged: the reader's general
// path then parses it, so every value and every error message is that path's.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string_view>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "workloads/csv_fields.hpp"

namespace allocsim {

// How many bytes from a line's start split_plain_row reads (the longest line it takes is
// one shorter): the caller leaves longer lines and the last few of a buffer to its general path.
inline constexpr std::size_t kPlainRowReach = 64;

// Bit i set where byte i of the 64 at `at` is a comma (`commas`) or a newline (`newlines`).
struct LineMasks {
  std::uint64_t commas;
  std::uint64_t newlines;
};

// With plain 64-bit words: each byte's match bit (comma_bytes), gathered into one byte by
// a multiply (every bit lands at its own place, so no carries disturb the others).
inline LineMasks line_masks_portable(const char* at) {
  constexpr std::uint64_t kNewlines = 0x0a0a'0a0a'0a0a'0a0aULL;
  constexpr std::uint64_t kCommasToNewlines = 0x2c2c'2c2c'2c2c'2c2cULL ^ kNewlines;
  const auto gather = [](std::uint64_t top_bits) { return ((top_bits >> 7) * 0x0102'0408'1020'4080ULL) >> 56; };
  LineMasks masks{0, 0};
  for (unsigned word = 0; word < kPlainRowReach / 8; ++word) {
    std::uint64_t bytes = 0;
    std::memcpy(&bytes, at + 8 * word, 8);
    if constexpr (std::endian::native == std::endian::big) bytes = __builtin_bswap64(bytes);
    masks.commas |= gather(comma_bytes(bytes)) << (8 * word);
    masks.newlines |= gather(comma_bytes(bytes ^ kCommasToNewlines)) << (8 * word);  // newlines made commas
  }
  return masks;
}

inline LineMasks line_masks(const char* at) {
#if defined(__SSE2__)
  const __m128i commas = _mm_set1_epi8(',');
  const __m128i newlines = _mm_set1_epi8('\n');
  LineMasks masks{0, 0};
  for (unsigned block = 0; block < kPlainRowReach / 16; ++block) {
    const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(at + 16 * block));
    const auto bits = [&](__m128i match) {
      return std::uint64_t{static_cast<std::uint16_t>(_mm_movemask_epi8(_mm_cmpeq_epi8(bytes, match)))} << (16 * block);
    };
    masks.commas |= bits(commas);
    masks.newlines |= bits(newlines);
  }
  return masks;
#else
  return line_masks_portable(at);
#endif
}

// One alloc or free row, its fields as the general path would read them.
struct PlainRow {
  std::uint64_t time = 0;
  bool alloc = false;  // else a free
  std::string_view id;
  std::optional<std::uint64_t> bytes;  // nullopt: the field is empty
  std::uint64_t stream = 0;            // at most five digits; an empty field reads 0
  std::string_view tag;                // not looked up here
  const char* next = nullptr;          // the next line's first byte
};

// Parses the line starting at `at` into `row` when it has the plain shape; false, with
// `row` undefined, when it does not. Reads kPlainRowReach bytes from `at`, and needs them
// before `readable_end`.
inline bool split_plain_row(const char* at, const char* readable_end, PlainRow& row) {
  const LineMasks masks = line_masks(at);
  if (masks.newlines == 0) return false;
  const auto length = static_cast<unsigned>(std::countr_zero(masks.newlines));
  std::uint64_t commas = masks.commas & ((std::uint64_t{1} << length) - 1);
  unsigned comma[5];
  for (unsigned& position : comma) {
    position = static_cast<unsigned>(std::countr_zero(commas));  // 64 once none is left
    commas &= commas - 1;
  }
  if (comma[4] >= length || commas != 0) return false;  // not exactly six fields
  // Field i runs from start(i) to comma[i] (the tag to the newline).
  const auto start = [&](unsigned field) { return field == 0 ? 0 : comma[field - 1] + 1; };
  const auto text = [&](unsigned field) {
    const unsigned end = field < 5 ? comma[field] : length;
    return std::string_view(at + start(field), end - start(field));
  };
  const auto number = [&](std::string_view field, std::uint64_t& value) {
    const std::optional<std::uint64_t> digits = csv_digits(field, readable_end);
    value = digits.value_or(0);
    return digits.has_value();
  };
  const auto printable_ends = [](std::string_view field) {
    return !field.empty() && static_cast<unsigned char>(field.front()) > ' ' &&
           static_cast<unsigned char>(field.back()) > ' ';
  };
  bool plain = number(text(0), row.time);
  const std::string_view op = text(1);
  row.alloc = op == "alloc";
  plain &= row.alloc || op == "free";
  row.id = text(2);
  plain &= printable_ends(row.id);
  const std::string_view bytes = text(3);
  std::uint64_t value = 0;
  plain &= bytes.empty() || number(bytes, value);
  row.bytes = bytes.empty() ? std::nullopt : std::optional<std::uint64_t>(value);
  const std::string_view stream = text(4);
  plain &= stream.empty() || (stream.size() <= 5 && number(stream, row.stream));
  if (stream.empty()) row.stream = 0;
  row.tag = text(5);
  plain &= row.tag.empty() || printable_ends(row.tag);
  row.next = at + length + 1;
  return plain;
}

}  // namespace allocsim
