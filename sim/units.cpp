#include "sim/units.hpp"

#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <limits>

#include "sim/error.hpp"
#include "sim/float_chars.hpp"

namespace allocsim {
namespace {

std::string three_digits(double value, std::string_view unit) {
  char buffer[32];
  const char* format = value < 10 ? "%.2f %.*s" : value < 100 ? "%.1f %.*s" : "%.0f %.*s";
  std::snprintf(buffer, sizeof buffer, format, value, static_cast<int>(unit.size()), unit.data());
  return buffer;
}

struct UnitName {
  std::string_view name;
  Bytes factor;
};

// Longest names first so that "kib" is not read as "k" + "ib".
constexpr std::array<UnitName, 14> kUnits{{
    {"kib", 1_KiB}, {"mib", 1_MiB}, {"gib", 1_GiB}, {"tib", Bytes{1} << 40},
    {"kb", 1000}, {"mb", 1000'000}, {"gb", 1000'000'000}, {"tb", 1000'000'000'000},
    {"k", 1_KiB}, {"m", 1_MiB}, {"g", 1_GiB}, {"t", Bytes{1} << 40},
    {"b", 1}, {"", 1},
}};

std::string lowercase(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace

std::string format_bytes(Bytes bytes) {
  static constexpr std::array<std::string_view, 5> kNames{"KiB", "MiB", "GiB", "TiB", "PiB"};
  if (bytes < 1_KiB) return std::to_string(bytes) + " B";
  std::size_t index = 0;
  Bytes unit = 1_KiB;
  while (index + 1 < kNames.size() && bytes >= unit * 1024) {
    unit *= 1024;
    ++index;
  }
  if (bytes % unit == 0) return std::to_string(bytes / unit) + " " + std::string(kNames[index]);
  return three_digits(static_cast<double>(bytes) / static_cast<double>(unit), kNames[index]);
}

std::string format_nanos(Nanos nanos) {
  if (nanos < 1000) return std::to_string(nanos) + " ns";
  const double value = static_cast<double>(nanos);
  if (nanos < 1000'000) return three_digits(value / 1e3, "us");
  if (nanos < 1000'000'000) return three_digits(value / 1e6, "ms");
  return three_digits(value / 1e9, "s");
}

Bytes parse_bytes(std::string_view text) {
  const auto fail = [&](std::string_view why) -> Bytes {
    throw Error("bad size '" + std::string(text) + "': " + std::string(why) +
                " (examples: 4096, 512MiB, 16GiB, 1.5GB)");
  };
  std::size_t pos = 0;
  unsigned __int128 whole = 0;
  unsigned __int128 fraction = 0;
  unsigned __int128 scale = 1;
  bool any_digit = false;
  for (; pos < text.size() && std::isdigit(static_cast<unsigned char>(text[pos])); ++pos) {
    whole = whole * 10 + static_cast<unsigned>(text[pos] - '0');
    if (whole > std::numeric_limits<Bytes>::max()) return fail("too large");
    any_digit = true;
  }
  if (pos < text.size() && text[pos] == '.') {
    for (++pos; pos < text.size() && std::isdigit(static_cast<unsigned char>(text[pos])); ++pos) {
      if (scale > 1'000'000'000'000'000'000ULL) return fail("too many decimals");
      fraction = fraction * 10 + static_cast<unsigned>(text[pos] - '0');
      scale *= 10;
      any_digit = true;
    }
  }
  if (!any_digit) return fail(text.starts_with('-') ? "negative" : "no number");
  while (pos < text.size() && text[pos] == ' ') ++pos;
  const std::string unit_text = lowercase(text.substr(pos));
  for (const UnitName& unit : kUnits) {
    if (unit_text != unit.name) continue;
    // whole < 2^64, fraction < scale <= 10^19 and factor <= 2^40: no product overflows.
    // A decimal of a larger unit rounds down to a byte (51.6GiB: a capacity as printed);
    // in bytes a fraction is a mistake, not a rounding.
    const unsigned __int128 fraction_bytes = fraction * unit.factor;
    if (unit.factor == 1 && fraction_bytes % scale != 0) {
      return fail("not a whole number of bytes (a decimal needs a unit: 1.5KiB, 51.6GiB)");
    }
    const unsigned __int128 bytes = whole * unit.factor + fraction_bytes / scale;
    if (bytes > std::numeric_limits<Bytes>::max()) return fail("too large");
    return static_cast<Bytes>(bytes);
  }
  return fail("unknown unit '" + std::string(text.substr(pos)) + "' (B, KiB, MiB, GiB, TiB, KB, MB, GB, TB)");
}

std::uint64_t parse_unsigned(std::string_view text, const std::string& what) {
  std::uint64_t value = 0;
  const char* end = text.data() + text.size();
  const auto [at, error] = std::from_chars(text.data(), end, value);
  if (!text.empty() && error == std::errc{} && at == end) return value;
  const bool digits = text.size() > 1 && text.substr(1).find_first_not_of("0123456789") == std::string_view::npos;
  if (text.starts_with('-') && digits) throw Error(what + " is negative");
  if (error == std::errc::result_out_of_range && at == end) throw Error(what + " is too large (2^64 - 1 at most)");
  throw Error(what + " is not a non-negative integer");
}

std::string format_bytes_exact(Bytes bytes) {
  const std::string exact = std::to_string(bytes) + " B";
  const std::string short_form = format_bytes(bytes);
  return short_form == exact ? exact : short_form + " (" + exact + ")";
}

std::string format_address(Addr addr) {
  char text[2 + 16 + 1];
  std::snprintf(text, sizeof text, "0x%llx", static_cast<unsigned long long>(addr));
  return text;
}

Nanos parse_nanos(std::string_view text) {
  const auto fail = [&](std::string_view why) -> Nanos {
    throw Error("bad time '" + std::string(text) + "': " + std::string(why) + " (examples: 0, 500ms, 2.5s, 10us)");
  };
  double value = 0;
  const auto [end, error] = double_from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || !std::isfinite(value)) return fail("not a number");
  if (value < 0 || text.front() == '-') return fail("negative");
  const std::string unit = lowercase(std::string_view(end, static_cast<std::size_t>(text.data() + text.size() - end)));
  double factor = 0;
  if (unit.empty() || unit == "ns") {
    factor = 1;
  } else if (unit == "us") {
    factor = 1e3;
  } else if (unit == "ms") {
    factor = 1e6;
  } else if (unit == "s") {
    factor = 1e9;
  } else {
    return fail("unknown unit '" + unit + "' (ns, us, ms, s)");
  }
  const double nanos = std::round(value * factor);
  if (nanos > static_cast<double>(Nanos{1} << 62)) return fail("too large");
  return static_cast<Nanos>(nanos);
}

}  // namespace allocsim
