// What the line-based trace readers (our CSV, RMM's log) share: trimming, the byte order
// mark a Windows editor leaves, and errors that name the file and line.
#pragma once

#include <cstddef>
#include <istream>
#include <string>
#include <string_view>

#include "sim/error.hpp"

namespace allocsim {

// A file saved by Excel or Notepad may open with a UTF-8 byte order mark.
inline constexpr std::string_view kUtf8Bom = "\xEF\xBB\xBF";

// Spaces and tabs at both ends, and the '\r' of a CRLF line.
inline std::string_view trim_line(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t' || text.back() == '\r')) text.remove_suffix(1);
  return text;
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

}  // namespace allocsim
