// Free blocks ordered by (size, address): the order of best fit in PyTorch's caching
// allocator (BlockComparatorSize) and TensorFlow's BFC, kept flat instead of in a tree.
// As TensorFlow's BFC (and TLSF) does, sizes fall into bins, here 32 per power of two, each
// bin a vector sorted by (size, address), with a bitmap of the non-empty bins: a best fit
// is a binary search in one short vector, or the first entry of the next non-empty bin (a
// find-first-set), and every size in a bin is larger than every size in the bins below.
// Vectors keep their capacity, so a steady state allocates nothing.
// Contract: no two entries have the same (size, address); cursors stay valid only until
// the next insert or erase.
#pragma once

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "policies/common/flat_search.hpp"
#include "sim/units.hpp"

namespace allocsim {

class SizeBins {
 public:
  struct Entry {
    Bytes size;
    Addr addr;
    std::uint32_t handle;  // the owner's record for this block
  };
  // A position in the order: bin, then index in it; end() is {kBins, 0}.
  struct Cursor {
    std::uint32_t bin;
    std::uint32_t index;
    friend bool operator==(const Cursor&, const Cursor&) = default;
  };

  // 32 bins per power of two, not 8: a best fit then searches, and an insert moves, fewer
  // entries.
  static constexpr std::uint32_t kSubBits = 5;
  // 1920 bins cover every 64-bit size, in whole bitmap words.
  static constexpr std::uint32_t kBins = (64 - kSubBits + 1) << kSubBits;

  // Sizes below 32 have a bin each; from 32 on, [2^e, 2^(e+1)) splits into 32 equal bins.
  static constexpr std::uint32_t bin_of(Bytes size) {
    if (size < (Bytes{1} << kSubBits)) return static_cast<std::uint32_t>(size);
    const auto exponent = static_cast<std::uint32_t>(std::bit_width(size)) - 1;
    const auto sub = static_cast<std::uint32_t>(size >> (exponent - kSubBits)) - (1u << kSubBits);
    return ((exponent - kSubBits + 1) << kSubBits) + sub;
  }

  void insert(const Entry& entry);
  void erase(Bytes size, Addr addr);  // exactly an entry in the set; Error otherwise
  void erase(Cursor at);
  bool contains(Bytes size, Addr addr) const;
  Cursor find(Bytes size, Addr addr) const;  // the entry of exactly (size, addr), or end()

  // The first entry of at least `size` bytes (the lowest address among equals), or end().
  Cursor lower_bound(Bytes size) const;
  Cursor begin() const { return Cursor{next_nonempty(0), 0}; }
  static constexpr Cursor end() { return Cursor{kBins, 0}; }
  Cursor next(Cursor at) const;
  Cursor prev(Cursor at) const;  // at must not be begin()
  const Entry& operator[](Cursor at) const { return bins_[at.bin][at.index]; }

  std::size_t size() const { return count_; }
  bool empty() const { return count_ == 0; }
  // The last entry in the order, the largest size at its highest address: size() > 0.
  const Entry& back() const { return bins_[prev_nonempty(kBins)].back(); }
  template <typename Visit>
  void for_each(Visit visit) const {  // in order
    for (std::uint32_t bin = next_nonempty(0); bin < kBins; bin = next_nonempty(bin + 1)) {
      for (const Entry& entry : bins_[bin]) visit(entry);
    }
  }
  void clear();

  // Every bin sorted, in the right bin, its bitmap bit set iff it is non-empty, the count
  // right; Error otherwise.
  void check() const;

 private:
  static constexpr std::uint32_t kWords = kBins / 64;
  static_assert(kBins % 64 == 0 && kWords <= 64);

  std::uint32_t next_nonempty(std::uint32_t from) const;    // the first >= from, or kBins
  std::uint32_t prev_nonempty(std::uint32_t before) const;  // the last < before; kBins if none
  void mark(std::uint32_t bin, bool nonempty);
  static std::size_t position(const std::vector<Entry>& entries, Bytes size, Addr addr);
  [[noreturn]] static void missing(Bytes size, Addr addr);

  std::array<std::vector<Entry>, kBins> bins_;
  std::array<std::uint64_t, kWords> words_{};  // bit b % 64 of word b / 64: bin b is non-empty
  std::uint64_t summary_ = 0;                  // bit w: word w is non-zero
  std::size_t count_ = 0;
};

// The hot operations, inline, since each policy built on these bins makes several per
// request.

// Where (size, addr) sits in a bin: one 128-bit compare per step, branch-free.
inline std::size_t SizeBins::position(const std::vector<Entry>& entries, Bytes size, Addr addr) {
  const unsigned __int128 key = static_cast<unsigned __int128>(size) << 64 | addr;
  return flat_lower_bound(entries.data(), entries.size(), [&](const Entry& entry) {
    return (static_cast<unsigned __int128>(entry.size) << 64 | entry.addr) < key;
  });
}

inline void SizeBins::mark(std::uint32_t bin, bool nonempty) {
  const std::uint32_t word = bin / 64;
  const std::uint64_t bit = std::uint64_t{1} << (bin % 64);
  words_[word] = nonempty ? words_[word] | bit : words_[word] & ~bit;
  const std::uint64_t word_bit = std::uint64_t{1} << word;
  summary_ = words_[word] != 0 ? summary_ | word_bit : summary_ & ~word_bit;
}

inline std::uint32_t SizeBins::next_nonempty(std::uint32_t from) const {
  if (from >= kBins) return kBins;
  std::uint32_t word = from / 64;
  const std::uint64_t here = words_[word] & (~std::uint64_t{0} << (from % 64));
  if (here != 0) return word * 64 + static_cast<std::uint32_t>(std::countr_zero(here));
  const std::uint64_t later = word + 1 < 64 ? summary_ & (~std::uint64_t{0} << (word + 1)) : 0;
  if (later == 0) return kBins;
  word = static_cast<std::uint32_t>(std::countr_zero(later));
  return word * 64 + static_cast<std::uint32_t>(std::countr_zero(words_[word]));
}

inline void SizeBins::insert(const Entry& entry) {
  const std::uint32_t bin = bin_of(entry.size);
  std::vector<Entry>& entries = bins_[bin];
  entries.insert(entries.begin() + static_cast<std::ptrdiff_t>(position(entries, entry.size, entry.addr)), entry);
  if (entries.size() == 1) mark(bin, true);
  ++count_;
}

inline void SizeBins::erase(Cursor at) {
  std::vector<Entry>& entries = bins_[at.bin];
  entries.erase(entries.begin() + at.index);
  if (entries.empty()) mark(at.bin, false);
  --count_;
}

inline void SizeBins::erase(Bytes size, Addr addr) {
  const std::uint32_t bin = bin_of(size);
  const std::vector<Entry>& entries = bins_[bin];
  const std::size_t at = position(entries, size, addr);
  if (at == entries.size() || entries[at].size != size || entries[at].addr != addr) {
    missing(size, addr);
  }
  erase(Cursor{bin, static_cast<std::uint32_t>(at)});
}

inline SizeBins::Cursor SizeBins::find(Bytes size, Addr addr) const {
  const std::uint32_t bin = bin_of(size);
  const std::vector<Entry>& entries = bins_[bin];
  const std::size_t at = position(entries, size, addr);
  if (at == entries.size() || entries[at].size != size || entries[at].addr != addr) return end();
  return Cursor{bin, static_cast<std::uint32_t>(at)};
}

inline SizeBins::Cursor SizeBins::lower_bound(Bytes size) const {
  const std::uint32_t bin = bin_of(size);
  const std::vector<Entry>& entries = bins_[bin];
  const std::size_t at = position(entries, size, 0);
  if (at < entries.size()) return Cursor{bin, static_cast<std::uint32_t>(at)};
  return Cursor{next_nonempty(bin + 1), 0};
}

}  // namespace allocsim
