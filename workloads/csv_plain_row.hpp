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
// readable. A number field must start within them less eight bytes (digits_value reads
// eight), so a line whose stream field starts later goes to the general path too.
[[gnu::always_inline]] inline bool split_plain_row(const char* at, PlainRow& row) {
  const LineMasks masks = line_masks(at);
  if (masks.newlines == 0) return false;
  const auto length = static_cast<unsigned>(std::countr_zero(masks.newlines));
  std::uint64_t commas = masks.commas & ((std::uint64_t{1} << length) - 1);
  unsigned comma[5];
  for (unsigned& position : comma) {
    position = static_cast<unsigned>(std::countr_zero(commas));  // 64 once none is left
    commas &= commas - 1;
  }
  // Not exactly six fields, or a stream field too far in to read eight bytes from.
  if (comma[4] >= length || commas != 0 || comma[3] + 1 + 8 > kPlainRowReach) return false;
  // Field i runs from after comma i-1 (the line's start for the time) to comma i (the
  // tag to the newline).
  const auto text = [&](unsigned begin, unsigned end) { return std::string_view(at + begin, end - begin); };
  const auto printable_ends = [](std::string_view field) {
    return !field.empty() && static_cast<unsigned char>(field.front()) > ' ' &&
           static_cast<unsigned char>(field.back()) > ' ';
  };
  bool plain = digits_value(at, comma[0], row.time);
  const std::string_view op = text(comma[0] + 1, comma[1]);
  row.alloc = op.size() == 5 && std::memcmp(op.data(), "alloc", 5) == 0;
  plain &= row.alloc || (op.size() == 4 && std::memcmp(op.data(), "free", 4) == 0);
  row.id = text(comma[1] + 1, comma[2]);
  plain &= printable_ends(row.id);
  const unsigned bytes_length = comma[3] - comma[2] - 1;
  std::uint64_t bytes = 0;
  plain &= bytes_length == 0 || digits_value(at + comma[2] + 1, bytes_length, bytes);
  row.bytes = bytes_length == 0 ? std::nullopt : std::optional<std::uint64_t>(bytes);
  // The stream is most often one digit: that needs no word of digits.
  const unsigned stream_length = comma[4] - comma[3] - 1;
  const auto first_digit = static_cast<std::uint64_t>(static_cast<unsigned char>(at[comma[3] + 1]) - '0');
  row.stream = stream_length == 0 ? 0 : first_digit;
  if (stream_length > 1) {
    plain &= stream_length <= 5 && digits_value(at + comma[3] + 1, stream_length, row.stream);
  } else {
    plain &= stream_length == 0 || first_digit <= 9;
  }
  row.tag = text(comma[4] + 1, length);
  plain &= row.tag.empty() || printable_ends(row.tag);
  row.next = at + length + 1;
  return plain;
}

}  // namespace allocsim
