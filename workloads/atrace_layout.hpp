// The .atrace record and header packing, shared by the reader and the writer (the layout
// itself is described in workloads/atrace.hpp and docs/atrace.md).
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>
#include <string_view>

#include "sim/types.hpp"

namespace allocsim::atrace {

static_assert(std::endian::native == std::endian::little, ".atrace is read and written in place: a little-endian host");

inline constexpr std::uint32_t kFlagSteps = 1;
inline constexpr std::uint32_t kFlagLayers = 2;
inline constexpr std::uint32_t kKnownFlags = kFlagSteps | kFlagLayers;
inline constexpr unsigned kDeltaShift = 8;
inline constexpr std::uint64_t kMaxDelta = (std::uint64_t{1} << (64 - kDeltaShift)) - 1;  // ns, about 2.3 years
inline constexpr std::uint64_t kLow48 = (std::uint64_t{1} << 48) - 1;

struct Header {
  char magic[8];
  std::uint32_t version;
  std::uint32_t flags;
  std::uint64_t events;
  std::uint64_t slots;
  std::uint64_t allocations;
  std::uint64_t start_time;        // ns; each record's time is the previous one's plus its delta
  std::uint64_t live_lower_bound;  // bytes
  std::uint64_t payload_bytes;     // everything after the header
  std::uint64_t checksum;          // of the payload, then of the header's bytes before this field
};
static_assert(sizeof(Header) == 72);
inline constexpr std::size_t kCheckedHeaderBytes = 64;

// One event. word0: op (bits 0-1), tag (2-5), value bit 48 (6), zero (7), time delta
// (8-63). word1: value bits 0-47, stream (48-63). The value: an alloc's requested bytes,
// a free's slot, a sync's kind and waits_for (as sync_id), 0 for a release.
struct Record {
  std::uint64_t word0;
  std::uint64_t word1;
};
static_assert(sizeof(Record) == 16);

inline Record pack(Op op, Tag tag, Stream stream, std::uint64_t value, std::uint64_t delta) {
  return Record{static_cast<std::uint64_t>(op) | static_cast<std::uint64_t>(tag) << 2 | (value >> 48 & 1) << 6 |
                    delta << kDeltaShift,
                (value & kLow48) | static_cast<std::uint64_t>(stream) << 48};
}
inline Op op_of(const Record& r) { return static_cast<Op>(r.word0 & 3); }
inline std::uint64_t tag_bits(const Record& r) { return r.word0 >> 2 & 15; }
inline bool reserved_bit(const Record& r) { return (r.word0 >> 7 & 1) != 0; }
inline std::uint64_t delta_of(const Record& r) { return r.word0 >> kDeltaShift; }
inline std::uint64_t value_of(const Record& r) { return (r.word1 & kLow48) | (r.word0 >> 6 & 1) << 48; }
inline Stream stream_of(const Record& r) { return static_cast<Stream>(r.word1 >> 48); }

// FNV-1a over 64-bit words (the payload is a whole number of them): one multiply per
// 8 bytes, so checking a 16 GB file costs seconds, not a minute.
class Checksum {
 public:
  void add(const void* data, std::size_t bytes) {
    const auto* p = static_cast<const unsigned char*>(data);
    for (std::size_t i = 0; i + 8 <= bytes; i += 8) {
      std::uint64_t word = 0;
      std::memcpy(&word, p + i, 8);
      hash_ = (hash_ ^ word) * 0x100000001b3ULL;
    }
  }
  std::uint64_t value() const { return hash_; }

 private:
  std::uint64_t hash_ = 0xcbf29ce484222325ULL;
};

}  // namespace allocsim::atrace
