// The records of a CSV parse on two threads (workloads/csv_trace.cpp): each plain row one
// thread splits, in a block of them, as the other reads it to renumber its id and build the
// trace. Every row crosses from one core to the other, so a record is 32 bytes, written
// past the caches.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>

#include "sim/types.hpp"
#include "workloads/id_renumbering.hpp"

#if defined(__SSE2__) && defined(__x86_64__)
#include <emmintrin.h>
#endif

namespace allocsim {

// A plain alloc or free row, or any other line as its text.
// No member initializers: a block's rows are allocated unwritten, and each row is made
// whole (`SplitRow row{}`) before it is put.
struct alignas(32) SplitRow {
  enum class Kind : std::uint8_t { alloc, free, line };
  Nanos time;
  std::uint64_t bytes;  // as the row says (has_bytes); a line: where its text is in SplitBlock::text
  std::uint64_t word;   // the id's IdKey::word; an id over 8 bytes: where its text is in SplitBlock::text
  std::uint32_t home;   // the id's (or the line's) first byte in the text, from SplitBlock::home
  std::uint32_t stream : 16;
  std::uint32_t size : 6;  // the id's bytes (a plain row's id is shorter than a line of 64)
  std::uint32_t kind : 2;  // Kind
  std::uint32_t tag : 4;   // Tag
  std::uint32_t has_bytes : 1;
};
static_assert(sizeof(SplitRow) == 32 && offsetof(SplitRow, word) == 16 && offsetof(SplitRow, home) == 24 &&
              std::is_trivial_v<SplitRow>);
static_assert(static_cast<unsigned>(Tag::runtime) < 16);

// `row` into `to`, past the caches: the splitter's stores then wait for no cache line
// that the other thread read last (a plain store asks that core for the line first, and
// on this project's VMs that wait was most of the splitter's time).
[[gnu::always_inline]] inline void put_split_row(SplitRow* to, const SplitRow& row) {
#if defined(__SSE2__) && defined(__x86_64__)
  std::uint64_t last = 0;  // home and the bit fields, as their bytes lie
  std::memcpy(&last, reinterpret_cast<const unsigned char*>(&row) + offsetof(SplitRow, home), 8);
  auto* const words = reinterpret_cast<__m128i*>(to);
  _mm_stream_si128(words, _mm_set_epi64x(static_cast<long long>(row.bytes), static_cast<long long>(row.time)));
  _mm_stream_si128(words + 1, _mm_set_epi64x(static_cast<long long>(last), static_cast<long long>(row.word)));
#else
  *to = row;
#endif
}

// put_split_row's stores are ordered after nothing: this makes them land before the store
// that follows it (the flag handing their block over).
inline void publish_split_rows() {
#if defined(__SSE2__) && defined(__x86_64__)
  _mm_sfence();
#endif
}

struct SplitBlock {
  static constexpr std::size_t kMostRows = 8192;

  // Room for `rows` rows (a small text takes a few), once, by the thread that fills it.
  void make_room(std::size_t rows) {
    if (this->rows) return;
    this->rows = std::make_unique_for_overwrite<SplitRow[]>(rows);
    capacity = rows;
  }

  std::unique_ptr<SplitRow[]> rows;
  std::size_t capacity = 0;
  std::size_t count = 0;
  const char* home = nullptr;  // where the rows' homes count from
  std::string text;            // of lines, and of ids over 8 bytes

  std::span<const SplitRow> filled() const { return std::span(rows.get(), count); }
  const char* home_of(const SplitRow& row) const { return home + row.home; }
  // The id's text as the first thread compares it: an id of up to 8 bytes is told apart by
  // its key, never read, so it stays where it is in the text.
  std::string_view id_of(const SplitRow& row) const {
    if (row.size <= 8) return std::string_view(home_of(row), row.size);
    return std::string_view(text).substr(row.word, row.size);
  }
  IdKey key_of(const SplitRow& row) const {
    return row.size <= 8 ? short_id_key(row.size, row.word) : id_key(id_of(row));
  }
  std::string_view line_of(const SplitRow& row) const { return held_from(row).substr(0, row.bytes >> 32); }
  // The block's text from a line's first byte on: what a reader of the line may read.
  std::string_view held_from(const SplitRow& row) const {
    return std::string_view(text).substr(row.bytes & 0xffff'ffff);
  }
  // Handed on once its rows are all used, or its text holds as many bytes as they would.
  bool full() const { return count == capacity || text.size() >= sizeof(SplitRow) * capacity; }
};

}  // namespace allocsim
