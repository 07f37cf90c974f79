// What the line-based trace readers (our CSV, RMM's log, TensorFlow's memory log) share:
// trimming, the byte order mark a Windows editor leaves, errors that name the file and
// line, and reading a whole file or stream: each reader parses a buffer (what the fuzz
// targets in tests/fuzz call).
#pragma once

#include <cstddef>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <istream>
#include <iterator>
#include <string>
#include <string_view>
#include <utility>

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

// The non-blank lines of `text`, trimmed, a leading byte order mark dropped, handed out
// as views into `text`, never copied, to on_line(text, line_number); a reader may stop
// between lines and go on later (a stream parses a window of rows at a time). An Error
// from on_line comes back as "name:LINE: message".
class TextLines {
 public:
  TextLines(std::string_view text, std::string name)
      : rest_(text), name_(std::move(name)), newlines_end_(after_last_newline(text)) {
    if (rest_.starts_with(kUtf8Bom)) rest_.remove_prefix(kUtf8Bom.size());
  }
  // A later part of a text, from a line's start, after `lines_before` lines: its first line
  // is number lines_before + 1, and it has no byte order mark (only a text's start has one).
  TextLines(std::string_view part, std::string name, std::size_t lines_before)
      : rest_(part), line_number_(lines_before), name_(std::move(name)), newlines_end_(after_last_newline(part)) {}

  bool done() const { return rest_.empty(); }
  const char* position() const { return rest_.data(); }  // where the next line starts
  std::size_t lines() const { return line_number_; }     // read so far, blank ones too

  // Lines while more() says so and some are left.
  template <class More, class OnLine>
  void read_while(More more, OnLine on_line) {
    read_while(more, [](const char*, const char*) -> const char* { return nullptr; }, on_line);
  }

  // The same, each line that ends with a newline first offered untrimmed to on_row(first
  // byte, end), for a reader that reads a line of its usual shape in one pass: `end` is one
  // past the text's last newline (so a loop over the line's bytes stops at its newline,
  // never at `end`). on_row returns where the next line starts, or nullptr to have the line
  // found, trimmed and handed to on_line.
  template <class More, class OnRow, class OnLine>
  void read_while(More more, OnRow on_row, OnLine on_line) {
    std::string_view text = rest_;  // a local, so that the loop keeps it in registers
    std::size_t line_number = line_number_;
    try {
      while (!text.empty() && more()) {
        ++line_number;
        const char* const next = text.data() < newlines_end_ ? on_row(text.data(), newlines_end_) : nullptr;
        if (next) {
          text.remove_prefix(static_cast<std::size_t>(next - text.data()));
          continue;
        }
        const void* const newline = std::memchr(text.data(), '\n', text.size());
        const std::size_t length =
            newline ? static_cast<std::size_t>(static_cast<const char*>(newline) - text.data()) : text.size();
        const std::string_view line = trim_line(text.substr(0, length));
        text.remove_prefix(newline ? length + 1 : length);
        if (!line.empty()) on_line(line, line_number);
      }
    } catch (const Error& error) {
      throw Error(name_ + ":" + std::to_string(line_number) + ": " + error.what());
    }
    rest_ = text;
    line_number_ = line_number;
  }

 private:
  static const char* after_last_newline(std::string_view text) {
    const std::size_t last = text.rfind('\n');
    return text.data() + (last == std::string_view::npos ? 0 : last + 1);
  }

  std::string_view rest_;
  std::size_t line_number_ = 0;
  std::string name_;
  const char* newlines_end_;  // one past the text's last newline (its start without one)
};

// Every line of `text`, as TextLines hands them out.
template <class OnLine>
void for_each_line(std::string_view text, const std::string& name, OnLine on_line) {
  TextLines(text, name).read_while([] { return true; }, on_line);
}

// The whole of `in`, for the readers that parse a buffer; "name: read error" when reading fails.
inline std::string read_text(std::istream& in, const std::string& name) {
  std::string text;
  char chunk[1 << 16];
  while (in.read(chunk, sizeof chunk) || in.gcount() > 0) text.append(chunk, static_cast<std::size_t>(in.gcount()));
  if (in.bad()) throw Error(name + ": read error");
  return text;
}

// A file's bytes; "PATH: cannot open" when it cannot be read.
inline std::string read_text_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path.string() + ": cannot open");
  return read_text(in, path.string());
}

}  // namespace allocsim
