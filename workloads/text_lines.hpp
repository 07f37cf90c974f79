// What the line-based trace readers (our CSV, RMM's log) share: trimming, the byte order
// mark a Windows editor leaves, and errors that name the file and line.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <istream>
#include <string>
#include <string_view>

#include "sim/error.hpp"

namespace allocsim {

// A file saved by Excel or Notepad may open with a UTF-8 byte order mark.
inline constexpr std::string_view kUtf8Bom = "\xEF\xBB\xBF";

// Spaces and tabs at both ends, and the '\r' of a CRLF line.
inline std::string_view trim_line(std::string_view text) {
  // Most texts need nothing: one test per end (' ', '\t' and '\r' are all <= ' ').
  if (text.empty() || (static_cast<unsigned char>(text.front()) > ' ' && static_cast<unsigned char>(text.back()) > ' ')) {
    return text;
  }
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t' || text.back() == '\r')) text.remove_suffix(1);
  return text;
}

// a == b, for the short texts of ids and names without a call to memcmp: two overlapping
// loads from each, never outside either text.
inline bool same_short_text(std::string_view a, std::string_view b) {
  const std::size_t n = a.size();
  if (n != b.size()) return false;
  if (n > 16) return std::memcmp(a.data(), b.data(), n) == 0;
  const auto same_at = [&](std::size_t at, auto word) {
    decltype(word) left = 0;
    decltype(word) right = 0;
    std::memcpy(&left, a.data() + at, sizeof word);
    std::memcpy(&right, b.data() + at, sizeof word);
    return left == right;
  };
  if (n >= 8) return same_at(0, std::uint64_t{}) && same_at(n - 8, std::uint64_t{});
  if (n >= 4) return same_at(0, std::uint32_t{}) && same_at(n - 4, std::uint32_t{});
  return n == 0 || (a[0] == b[0] && a[n / 2] == b[n / 2] && a[n - 1] == b[n - 1]);
}

// Calls on_line(text, line_number) for each non-blank line of `in`, trimmed, a leading
// byte order mark dropped. An Error from on_line comes back as "name:LINE: message"; a
// failed read is "name: read error".
template <class OnLine>
void for_each_line(std::istream& in, const std::string& name, OnLine on_line) {
  std::string line;
  std::size_t line_number = 0;
  try {
    while (std::getline(in, line)) {
      ++line_number;
      if (line_number == 1 && line.starts_with(kUtf8Bom)) line.erase(0, kUtf8Bom.size());
      const std::string_view text = trim_line(line);
      if (!text.empty()) on_line(text, line_number);
    }
  } catch (const Error& error) {
    throw Error(name + ":" + std::to_string(line_number) + ": " + error.what());
  }
  if (in.bad()) throw Error(name + ": read error");
}

// The same over a whole input in memory (a mapped file): the lines are views into `text`,
// never copied.
template <class OnLine>
void for_each_line(std::string_view text, const std::string& name, OnLine on_line) {
  if (text.starts_with(kUtf8Bom)) text.remove_prefix(kUtf8Bom.size());
  std::size_t line_number = 0;
  try {
    while (!text.empty()) {
      ++line_number;
      const void* const newline = std::memchr(text.data(), '\n', text.size());
      const std::size_t length =
          newline ? static_cast<std::size_t>(static_cast<const char*>(newline) - text.data()) : text.size();
      const std::string_view line = trim_line(text.substr(0, length));
      text.remove_prefix(newline ? length + 1 : length);
      if (!line.empty()) on_line(line, line_number);
    }
  } catch (const Error& error) {
    throw Error(name + ":" + std::to_string(line_number) + ": " + error.what());
  }
}

}  // namespace allocsim
