// An OOM message or log as a user pastes it into `allocsim explain`: each line's prefix
// dropped (a torchrun `[rank2]:`, a log timestamp, TensorFlow's or glog's `I file.cc:905]`),
// and the sizes the frameworks print (`14.76 GiB`, `1.00GiB`, `0 bytes`, `256.0KiB`), which
// are rounded: each is read with the error its last decimal allows, and printed back the
// way the framework prints sizes, so that the arithmetic is in the user's units.
#pragma once

#include <cctype>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sim/units.hpp"

namespace allocsim {

// The character tests the message readers share, on bytes of any value (a pasted text may
// hold any byte, and <cctype> wants an unsigned char).
inline bool is_digit(char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; }
inline bool is_alpha(char c) { return std::isalpha(static_cast<unsigned char>(c)) != 0; }

// `text` without its leading spaces and tabs.
inline std::string_view skip_spaces(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  return text;
}

// A size as a message prints it: the bytes it stands for, give or take `error`.
struct PrintedSize {
  Bytes bytes = 0;
  Bytes error = 0;   // half the last printed digit: 0.005 GiB for "14.76 GiB", 0 for "4096"
  std::string text;  // as printed, one space between number and unit: "14.76 GiB"
};

// "14.76 GiB", "14.76GiB", "0 bytes", "4B", "1024.00 KiB", "256.0KiB", "1073741824" (bytes);
// nothing when `text` is not one number and an optional unit (B, bytes, KiB, MiB, GiB, TiB,
// KB, MB, GB, TB, case-insensitive). The unit's factor is parse_bytes's.
std::optional<PrintedSize> parse_printed_size(std::string_view text);

// The size at the start of `text` (spaces allowed between number and unit), and how many
// characters it took.
struct SizeAt {
  PrintedSize size;
  std::size_t length = 0;
};
std::optional<SizeAt> printed_size_at(std::string_view text);

// How a framework prints a size: PyTorch's format_size ("20.00 MiB", "512 bytes") or
// TensorFlow's HumanReadableNumBytes ("1.00GiB", "256.0KiB", "512B").
enum class SizeStyle : std::uint8_t { torch, tensorflow };
std::string format_printed(Bytes bytes, SizeStyle style);
// Always in GiB with two decimals ("1.40 GiB"), as one figure is said whatever its size.
std::string format_gib(Bytes bytes);

// The line without what loggers and launchers put before the text: any run of
// `[...]` tags (`[rank2]:`, `[default0]:`, `[2024-01-05 10:00:00]`), ISO timestamps
// (`2020-02-15 17:58:44.147110:`), a level word (`I`, `W`, `INFO`, `ERROR:`), glog's
// `I0215 17:58:44.147110 12345 file.cc:905]` and TensorFlow's `file.cc:905] `.
std::string_view strip_line_prefix(std::string_view line);

// Every line of `text` with its prefix stripped and trimmed.
std::vector<std::string_view> pasted_lines(std::string_view text);

// The lines joined with every space, tab and line break removed: a message wrapped at any
// column (inside a word or a number) reads the same as one on a single line.
std::string joined_without_spaces(const std::vector<std::string_view>& lines);

}  // namespace allocsim
