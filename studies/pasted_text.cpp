#include "studies/pasted_text.hpp"

#include <array>
#include <cctype>
#include <cstdio>
#include <limits>

#include "sim/error.hpp"

namespace allocsim {
namespace {

char lower(char c) { return static_cast<char>(std::tolower(static_cast<unsigned char>(c))); }

bool starts_with_nocase(std::string_view text, std::string_view prefix) {
  if (text.size() < prefix.size()) return false;
  for (std::size_t i = 0; i < prefix.size(); ++i) {
    if (lower(text[i]) != prefix[i]) return false;
  }
  return true;
}

struct UnitSpelling {
  std::string_view spelling;  // lower case
  std::string_view unit;      // parse_bytes's name for it
  std::string_view shown;     // as the message spells it, for the text
  bool may_run_on;            // a letter may follow (the message read without its spaces)
};

// Longest first, so that "bytes" is not read as "b".
constexpr std::array<UnitSpelling, 10> kSpellings{{
    {"bytes", "B", "bytes", true},
    {"kib", "KiB", "KiB", true},
    {"mib", "MiB", "MiB", true},
    {"gib", "GiB", "GiB", true},
    {"tib", "TiB", "TiB", true},
    {"kb", "KB", "KB", false},
    {"mb", "MB", "MB", false},
    {"gb", "GB", "GB", false},
    {"tb", "TB", "TB", false},
    {"b", "B", "B", false},
}};

// `dddd-dd-dd` then a space or T and the time, an optional zone: an ISO timestamp.
std::size_t iso_timestamp_length(std::string_view text) {
  if (text.size() < 10 || !is_digit(text[0]) || !is_digit(text[3]) || text[4] != '-' || text[7] != '-') return 0;
  std::size_t at = 10;
  if (at < text.size() && (text[at] == ' ' || text[at] == 'T') && at + 1 < text.size() && is_digit(text[at + 1])) {
    ++at;
    while (at < text.size() && (is_digit(text[at]) || text[at] == ':' || text[at] == '.' || text[at] == ',')) ++at;
    if (at < text.size() && (text[at] == 'Z' || text[at] == '+')) {
      ++at;
      while (at < text.size() && (is_digit(text[at]) || text[at] == ':')) ++at;
    }
  }
  return at;
}

// `dd:dd:dd` with optional fraction: a time of day.
std::size_t time_length(std::string_view text) {
  if (text.size() < 8 || !is_digit(text[0]) || !is_digit(text[1]) || text[2] != ':' || !is_digit(text[3]) ||
      text[5] != ':') {
    return 0;
  }
  std::size_t at = 8;
  while (at < text.size() && (is_digit(text[at]) || text[at] == '.' || text[at] == ',')) ++at;
  return at;
}

// glog's `I0215 ` before the time: a level letter and the month and day.
std::size_t glog_date_length(std::string_view text) {
  if (text.size() < 6 || std::string_view("IWEF").find(text[0]) == std::string_view::npos) return 0;
  for (std::size_t i = 1; i < 5; ++i) {
    if (!is_digit(text[i])) return 0;
  }
  return text[5] == ' ' ? 6 : 0;
}

// `file.cc:905]` (TensorFlow's and glog's source location).
std::size_t source_location_length(std::string_view text) {
  const std::size_t end = text.find_first_of(" \t]");
  if (end == std::string_view::npos || text[end] != ']' || end < 3) return 0;
  std::size_t digits = end;
  while (digits > 0 && is_digit(text[digits - 1])) --digits;
  if (digits == end || digits == 0 || text[digits - 1] != ':') return 0;
  return end + 1;
}

std::size_t level_word_length(std::string_view text) {
  static constexpr std::array<std::string_view, 11> kLevels{"CRITICAL", "WARNING", "ERROR", "DEBUG", "FATAL",
                                                            "INFO",     "WARN",    "I",     "W",     "E", "F"};
  for (std::string_view level : kLevels) {
    if (!text.starts_with(level) || text.size() == level.size()) continue;
    const char next = text[level.size()];
    if (next == ':' ) return level.size() + 1;
    if (next == ' ' && level.size() == 1) return 2;  // "I tensorflow/...": a location must follow
    if (next == ' ') return level.size() + 1;
  }
  return 0;
}

}  // namespace

std::optional<SizeAt> printed_size_at(std::string_view text) {
  std::size_t at = 0;
  unsigned __int128 whole = 0;
  unsigned __int128 fraction = 0;
  unsigned __int128 scale = 1;
  int digits = 0;
  for (; at < text.size() && is_digit(text[at]); ++at) {
    if (++digits > 19) return std::nullopt;
    whole = whole * 10 + static_cast<unsigned>(text[at] - '0');
  }
  if (digits == 0) return std::nullopt;
  std::size_t number_end = at;
  if (at + 1 < text.size() && text[at] == '.' && is_digit(text[at + 1])) {
    for (++at; at < text.size() && is_digit(text[at]); ++at) {
      if (scale >= 1'000'000'000) return std::nullopt;
      fraction = fraction * 10 + static_cast<unsigned>(text[at] - '0');
      scale *= 10;
    }
    number_end = at;
  }
  const std::string_view number = text.substr(0, number_end);
  std::size_t unit_at = number_end;
  while (unit_at < text.size() && text[unit_at] == ' ') ++unit_at;
  const std::string_view rest = text.substr(unit_at);
  const UnitSpelling* found = nullptr;
  for (const UnitSpelling& spelling : kSpellings) {
    if (!starts_with_nocase(rest, spelling.spelling)) continue;
    const bool letter_follows = rest.size() > spelling.spelling.size() && is_alpha(rest[spelling.spelling.size()]);
    if (letter_follows && !spelling.may_run_on) continue;
    found = &spelling;
    break;
  }
  Bytes factor = 1;
  if (found) {
    std::string one_unit = "1";
    one_unit.append(found->unit);
    factor = parse_bytes(one_unit);
  }
  const unsigned __int128 scaled = (whole * scale + fraction) * factor;
  const unsigned __int128 bytes = (scaled + scale / 2) / scale;
  if (bytes > std::numeric_limits<Bytes>::max()) return std::nullopt;
  SizeAt size;
  size.size.bytes = static_cast<Bytes>(bytes);
  // Half the last printed digit; a whole number of bytes is exact.
  size.size.error = factor == 1 && scale == 1 ? 0 : static_cast<Bytes>(factor / scale / 2);
  // As printed ("GiB", "gib"), one space before it; a byte count keeps PyTorch's "bytes".
  std::string& shown = size.size.text;
  shown.assign(number);
  shown.push_back(' ');
  if (found && found->unit != "B") {
    shown.append(rest.substr(0, found->spelling.size()));
  } else {
    shown.append(found ? found->shown : std::string_view("bytes"));
  }
  size.length = found ? unit_at + found->spelling.size() : number_end;
  return size;
}

std::optional<PrintedSize> parse_printed_size(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  const std::optional<SizeAt> size = printed_size_at(text);
  if (!size || size->length != text.size()) return std::nullopt;
  return size->size;
}

std::string format_printed(Bytes bytes, SizeStyle style) {
  char buffer[48];
  const double value = static_cast<double>(bytes);
  if (style == SizeStyle::torch) {
    // c10's format_size: "<=" at each step, so 1 MiB is "1024.00 KiB".
    if (bytes <= 1024) return std::to_string(bytes) + " bytes";
    if (bytes <= 1_MiB) {
      std::snprintf(buffer, sizeof buffer, "%.2f KiB", value / 1024.0);
    } else if (bytes <= 1_GiB) {
      std::snprintf(buffer, sizeof buffer, "%.2f MiB", value / 1048576.0);
    } else {
      std::snprintf(buffer, sizeof buffer, "%.2f GiB", value / 1073741824.0);
    }
    return buffer;
  }
  if (bytes < 1024) return std::to_string(bytes) + "B";
  static constexpr std::array<char, 5> kUnits{'K', 'M', 'G', 'T', 'P'};
  double scaled = value / 1024.0;
  std::size_t unit = 0;
  while (scaled >= 1024.0 && unit + 1 < kUnits.size()) {
    scaled /= 1024.0;
    ++unit;
  }
  std::snprintf(buffer, sizeof buffer, "%.2f%ciB", scaled, kUnits[unit]);
  return buffer;
}

std::string format_gib(Bytes bytes) {
  char buffer[48];
  std::snprintf(buffer, sizeof buffer, "%.2f GiB", static_cast<double>(bytes) / 1073741824.0);
  return buffer;
}

std::string_view strip_line_prefix(std::string_view line) {
  for (int round = 0; round < 12; ++round) {
    line = skip_spaces(line);
    std::size_t length = 0;
    if (line.starts_with('[')) {
      const std::size_t close = line.substr(0, 64).find(']');
      if (close != std::string_view::npos) length = close + 1;
    }
    if (length == 0) length = iso_timestamp_length(line);
    if (length == 0) length = glog_date_length(line);
    if (length == 0) length = time_length(line);
    if (length == 0) length = source_location_length(line);
    if (length == 0 && round > 0 && !line.empty() && is_digit(line.front())) {
      // glog's thread id after its time
      std::size_t digits = 0;
      while (digits < line.size() && is_digit(line[digits])) ++digits;
      if (digits < line.size() && line[digits] == ' ' && source_location_length(skip_spaces(line.substr(digits))) > 0) {
        length = digits;
      }
    }
    if (length == 0) length = level_word_length(line);
    if (length == 0 && round > 0 && (line.starts_with("- ") || line.starts_with("| "))) length = 2;
    if (length == 0) break;
    line.remove_prefix(length);
    if (line.starts_with(':') || line.starts_with('|')) line.remove_prefix(1);
  }
  return skip_spaces(line);
}

std::vector<std::string_view> pasted_lines(std::string_view text) {
  std::vector<std::string_view> lines;
  while (!text.empty()) {
    const std::size_t newline = text.find('\n');
    std::string_view line = text.substr(0, newline);
    text.remove_prefix(newline == std::string_view::npos ? text.size() : newline + 1);
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t')) line.remove_suffix(1);
    line = strip_line_prefix(line);
    if (!line.empty()) lines.push_back(line);
  }
  return lines;
}

std::string joined_without_spaces(const std::vector<std::string_view>& lines) {
  std::string joined;
  for (std::string_view line : lines) {
    for (char c : line) {
      if (c != ' ' && c != '\t' && c != '\r') joined.push_back(c);
    }
  }
  return joined;
}

}  // namespace allocsim
