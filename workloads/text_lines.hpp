// What the line-based trace readers (our CSV, RMM's log, TensorFlow's memory log) share:
// trimming, the byte order mark a Windows editor leaves, and errors that name the file and
// line. Each loop reads a stream (a file, line by line) or a buffer already in memory (what
// a fuzzer hands a reader).
#pragma once

#include <cstddef>
#include <filesystem>
#include <fstream>
#include <istream>
#include <iterator>
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
      std::string_view text = line;
      if (line_number == 1 && text.starts_with(kUtf8Bom)) text.remove_prefix(kUtf8Bom.size());
      text = trim_line(text);
      if (!text.empty()) on_line(text, line_number);
    }
  } catch (const Error& error) {
    throw Error(name + ":" + std::to_string(line_number) + ": " + error.what());
  }
  if (in.bad()) throw Error(name + ": read error");
}

// The same over a buffer: lines end at '\n' (a '\r' before it is trimmed); a last line
// without one counts.
template <class OnLine>
void for_each_line(std::string_view buffer, const std::string& name, OnLine on_line) {
  std::size_t line_number = 0;
  if (buffer.starts_with(kUtf8Bom)) buffer.remove_prefix(kUtf8Bom.size());
  try {
    while (!buffer.empty()) {
      ++line_number;
      const auto end = buffer.find('\n');
      const std::string_view text = trim_line(buffer.substr(0, end));
      buffer.remove_prefix(end == std::string_view::npos ? buffer.size() : end + 1);
      if (!text.empty()) on_line(text, line_number);
    }
  } catch (const Error& error) {
    throw Error(name + ":" + std::to_string(line_number) + ": " + error.what());
  }
}

// A whole file in memory, for the readers that parse a buffer (JSON). Throws Error
// "PATH: cannot open" or "PATH: read error".
inline std::string read_whole_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path.string() + ": cannot open");
  std::string text{std::istreambuf_iterator<char>(in), {}};
  if (in.bad()) throw Error(path.string() + ": read error");
  return text;
}

}  // namespace allocsim
