#include "sim/float_chars.hpp"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <version>

namespace allocsim {

#if defined(__cpp_lib_to_chars)
std::from_chars_result double_from_chars(const char* first, const char* last, double& value) {
  return std::from_chars(first, last, value);
}

std::string double_to_shortest(double value) {
  char buffer[32];
  const auto result = std::to_chars(buffer, buffer + sizeof buffer, value);
  return std::string(buffer, result.ptr);
}
#else
std::from_chars_result double_from_chars(const char* first, const char* last, double& value) {
  return portable::double_from_chars(first, last, value);
}

std::string double_to_shortest(double value) { return portable::double_to_shortest(value); }
#endif

namespace portable {
namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// strtod reads what from_chars reads, and more: leading space, '+', hexadecimal.
bool from_chars_would_start(const std::string& text, std::size_t at) {
  if (at >= text.size()) return false;
  const char c = text[at];
  return is_digit(c) || c == '.' || c == 'i' || c == 'I' || c == 'n' || c == 'N';
}

}  // namespace

std::from_chars_result double_from_chars(const char* first, const char* last, double& value) {
  const std::string text(first, last);  // strtod needs a terminated string
  const std::size_t at = !text.empty() && text[0] == '-' ? 1 : 0;
  if (!from_chars_would_start(text, at)) return {first, std::errc::invalid_argument};
  if (text[at] == '0' && at + 1 < text.size() && (text[at + 1] == 'x' || text[at + 1] == 'X')) {
    value = at == 1 ? -0.0 : 0.0;  // from_chars stops before the 'x'
    return {first + at + 1, std::errc{}};
  }
  errno = 0;
  char* end = nullptr;
  const double parsed = std::strtod(text.c_str(), &end);
  const auto read = static_cast<std::size_t>(end - text.c_str());
  if (read == 0) return {first, std::errc::invalid_argument};
  // Overflow and underflow to zero are out of range for from_chars; a subnormal is a value.
  if (errno == ERANGE && (std::isinf(parsed) || parsed == 0)) return {first + read, std::errc::result_out_of_range};
  value = parsed;
  return {first + read, std::errc{}};
}

std::string double_to_shortest(double value) {
  const bool negative = std::signbit(value);
  if (std::isnan(value)) return negative ? "-nan" : "nan";
  if (std::isinf(value)) return negative ? "-inf" : "inf";
  if (value == 0) return negative ? "-0" : "0";
  // The fewest significant digits that read back as the value: "%.*e" rounds correctly.
  char scientific[40];
  int digits = 1;
  for (; digits < 17; ++digits) {
    std::snprintf(scientific, sizeof scientific, "%.*e", digits - 1, value);
    if (std::strtod(scientific, nullptr) == value) break;
  }
  if (digits == 17) std::snprintf(scientific, sizeof scientific, "%.16e", value);
  const std::string sci = scientific;
  // "-d.ddde-XX" into its significant digits and decimal exponent.
  const std::size_t e = sci.find('e');
  std::string significant;
  for (std::size_t i = negative ? 1 : 0; i < e; ++i) {
    if (sci[i] != '.') significant += sci[i];
  }
  const int exponent = std::atoi(sci.c_str() + e + 1);
  const int count = static_cast<int>(significant.size());
  std::string fixed = negative ? "-" : "";
  if (exponent >= count - 1) {
    // A whole number: its exact decimal value, as std::to_chars prints one past 2^53.
    char whole[400];
    std::snprintf(whole, sizeof whole, "%.0f", value);
    fixed = whole;
  } else if (exponent >= 0) {
    fixed += significant.substr(0, static_cast<std::size_t>(exponent) + 1) + "." +
             significant.substr(static_cast<std::size_t>(exponent) + 1);
  } else {
    fixed += "0." + std::string(static_cast<std::size_t>(-exponent - 1), '0') + significant;
  }
  return fixed.size() <= sci.size() ? fixed : sci;
}

}  // namespace portable

}  // namespace allocsim
