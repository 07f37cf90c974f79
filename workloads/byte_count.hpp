// How often one byte occurs in a buffer, 16 bytes a step: what counting a text's lines
// costs before a reader sizes its arrays by them (the CSV reader's background load).
// std::count widens every match to 64 bits; here a compare adds 0 or 1 to 16 byte-wide
// counters, summed once per 255 steps, before any of them can wrap.
#pragma once

#include <algorithm>
#include <cstddef>
#include <string_view>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace allocsim {

inline std::size_t count_byte(std::string_view text, char byte) {
  const char* at = text.data();
  std::size_t left = text.size();
  std::size_t count = 0;
#if defined(__SSE2__)
  const __m128i match = _mm_set1_epi8(byte);
  while (left >= 16) {
    std::size_t steps = std::min<std::size_t>(left / 16, 255);
    left -= steps * 16;
    __m128i counters = _mm_setzero_si128();
    for (; steps > 0; --steps, at += 16) {
      const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(at));
      counters = _mm_sub_epi8(counters, _mm_cmpeq_epi8(bytes, match));  // a match compares as -1
    }
    // Each half of the sum of the 16 counters is at most 8 * 255: it fits the low 16 bits.
    const __m128i sums = _mm_sad_epu8(counters, _mm_setzero_si128());
    count += static_cast<std::size_t>(_mm_cvtsi128_si32(sums)) + static_cast<std::size_t>(_mm_extract_epi16(sums, 4));
  }
#endif
  return count + static_cast<std::size_t>(std::count(at, at + left, byte));
}

}  // namespace allocsim
