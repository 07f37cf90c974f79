// The rows of our own trace CSV as write_csv_trace writes them (time_ns,op,id,bytes,stream,
// tag: an alloc or a free, plain digits, no spaces), read in one pass over the line's bytes:
// each field is cut and its number read as the bytes go by, where the general path finds
// the line's end, then its commas, then reads each field again.
// A line of any other shape (a comment, a space, a CR, an id with a byte at or below ',',
// a field of 20 digits, a release or sync row, a seventh field) is refused, not judged: the
// reader's general path then reads it, so every value and every error message is that
// path's.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string_view>

#include "sim/types.hpp"

namespace allocsim {

// One alloc or free row, its fields as the general path would read them.
struct PlainRow {
  Nanos time = 0;
  bool alloc = false;  // else a free
  std::string_view id;
  std::optional<Bytes> bytes;  // nullopt: the field is empty (a free may leave it so)
  Stream stream = 0;           // an empty field reads 0
  std::string_view tag;        // not looked up here
};

namespace plain_row {

// The helpers below read a line that ends before the text does: each loop stops at its
// newline at the latest, so none looks for the text's end.

// Plain digits up to `stop`, `at` then past it: false on any other byte, on no digit when
// one is needed, or on more than 19 (those may overflow: the general path reads them).
inline bool digits(const char*& at, char stop, bool needed, std::uint64_t& value) {
  const char* const start = at;
  std::uint64_t read = 0;
  while (static_cast<unsigned char>(*at - '0') < 10) read = read * 10 + static_cast<unsigned char>(*at++ - '0');
  const auto count = at - start;
  if (*at != stop || count > 19 || (needed && count == 0)) return false;
  ++at;
  value = read;
  return true;
}

// Text up to `stop`, `at` then past it, every byte of it above ',' in ASCII: letters, digits,
// "-._/:" and the like. A comma, a newline, a space, a tab or a CR (which the general path
// splits at or trims) stops it; where that is not `stop`, the line is not plain.
inline bool text(const char*& at, char stop, std::string_view& field) {
  const char* const start = at;
  while (static_cast<unsigned char>(*at) > ',') ++at;
  if (*at != stop) return false;
  field = std::string_view(start, static_cast<std::size_t>(at - start));
  ++at;
  return true;
}

// "alloc," or "free," at `at`, `at` then past the comma.
inline bool op(const char*& at, const char* end, bool& alloc) {
  if (end - at >= 6 && std::memcmp(at, "alloc,", 6) == 0) {
    alloc = true;
    at += 6;
    return true;
  }
  if (end - at >= 5 && std::memcmp(at, "free,", 5) == 0) {
    alloc = false;
    at += 5;
    return true;
  }
  return false;
}

}  // namespace plain_row

// Reads the line starting at `at` into `row` when it has the plain shape, and returns where
// the next line starts; nullptr, with `row` undefined, when it has not. The text is
// readable to `end`, and its last byte, end[-1], is a newline.
inline const char* read_plain_row(const char* at, const char* end, PlainRow& row) {
  using namespace plain_row;
  if (!digits(at, ',', true, row.time) || !op(at, end, row.alloc) || !text(at, ',', row.id) || row.id.empty()) {
    return nullptr;
  }
  const char* const bytes_start = at;
  std::uint64_t bytes = 0;
  if (!digits(at, ',', row.alloc, bytes)) return nullptr;
  row.bytes = at - bytes_start == 1 ? std::nullopt : std::optional<Bytes>(bytes);
  std::uint64_t stream = 0;
  if (!digits(at, ',', false, stream) || stream > 0xffff || !text(at, '\n', row.tag)) return nullptr;
  row.stream = static_cast<Stream>(stream);
  return at;
}

}  // namespace allocsim
