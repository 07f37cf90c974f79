// Units carried in types: Bytes, Nanos, binary literals, and their text forms.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace allocsim {

using Bytes = std::uint64_t;
using Nanos = std::uint64_t;
using Addr = std::uint64_t;

constexpr Bytes operator""_KiB(unsigned long long v) { return v << 10; }
constexpr Bytes operator""_MiB(unsigned long long v) { return v << 20; }
constexpr Bytes operator""_GiB(unsigned long long v) { return v << 30; }

// Largest size a request may name: 256 TiB, far beyond any device. Sums of live sizes are
// checked where they are kept (65,536 such requests would overflow 64 bits).
constexpr Bytes kMaxRequestBytes = Bytes{1} << 48;

// Saturates at the largest Bytes instead of wrapping: a huge size stays huge.
constexpr Bytes align_up(Bytes value, Bytes alignment) {
  // A power of two (every constant alignment here): an add and a mask, no branch. The
  // add overflows exactly when the next multiple is 2^64 or more, the saturating case.
  // The test is a mask, not std::has_single_bit: a popcount, a libgcc call without -mpopcnt.
  if (alignment != 0 && (alignment & (alignment - 1)) == 0) {
    Bytes sum = 0;
    return __builtin_add_overflow(value, alignment - 1, &sum) ? ~Bytes{0} : sum & ~(alignment - 1);
  }
  if (alignment == 0 || value % alignment == 0) return value;  // 1 is a power of two, above
  const Bytes pad = alignment - value % alignment;
  return value > ~Bytes{0} - pad ? ~Bytes{0} : value + pad;
}
constexpr Bytes align_down(Bytes value, Bytes alignment) {
  return alignment <= 1 ? value : value / alignment * alignment;
}

// What a reported number measures, so that each is printed with its unit.
enum class Unit : std::uint8_t { text, count, bytes, ratio, nanos, seconds, rate };

// "1.50 GiB", "256 B": three significant digits, binary units.
std::string format_bytes(Bytes bytes);
// "1 MiB (1048576 B)", or "700 B" where the two would say the same: for messages that
// must be exact and still readable.
std::string format_bytes_exact(Bytes bytes);
// "0x7f0000000000": a device address, as drivers and PyTorch print them.
std::string format_address(Addr addr);
// "12.3 ms", "850 ns".
std::string format_nanos(Nanos nanos);

// Accepts "4096", "512MiB", "16GiB", "1.5GB" (SI), "2 MiB", "51.6GiB"; units are
// case-insensitive. A decimal with a unit larger than a byte rounds down to a whole byte,
// computed exactly (51.6GiB is floor(516 * 2^30 / 10) B); a bare number or one in B must
// be whole bytes. Throws Error naming the text when it is not a size under 2^64, saying
// "negative", "too large" or "not a whole number of bytes" where that is why.
Bytes parse_bytes(std::string_view text);

// Accepts "0", "250ns", "10us", "1.5ms", "2s" (a bare number is nanoseconds). Throws
// Error naming the text when it is negative, not a number, or past 2^62 ns (146 years).
Nanos parse_nanos(std::string_view text);
// A plain whole number under 2^64 (a count, bytes, nanoseconds). Throws Error "`what` is
// negative", "`what` is too large" or "`what` is not a non-negative integer"; `what`
// quotes the text as the caller names it ("bytes '-5'", "policy x: steps=-1").
std::uint64_t parse_unsigned(std::string_view text, const std::string& what);

}  // namespace allocsim
