#include "policies/common/size_bins.hpp"

#include <algorithm>
#include <string>

#include "sim/error.hpp"

namespace allocsim {
namespace {

bool entry_less(const SizeBins::Entry& entry, Bytes size, Addr addr) {
  return entry.size != size ? entry.size < size : entry.addr < addr;
}

}  // namespace

std::uint32_t SizeBins::prev_nonempty(std::uint32_t before) const {
  if (before == 0) return kBins;
  const std::uint32_t last = before - 1;
  std::uint32_t word = last / 64;
  const std::uint64_t here = words_[word] & (~std::uint64_t{0} >> (63 - last % 64));
  if (here != 0) return word * 64 + 63 - static_cast<std::uint32_t>(std::countl_zero(here));
  const std::uint64_t earlier = summary_ & ((std::uint64_t{1} << word) - 1);
  if (earlier == 0) return kBins;
  word = 63 - static_cast<std::uint32_t>(std::countl_zero(earlier));
  return word * 64 + 63 - static_cast<std::uint32_t>(std::countl_zero(words_[word]));
}

bool SizeBins::contains(Bytes size, Addr addr) const { return find(size, addr) != end(); }

SizeBins::Cursor SizeBins::next(Cursor at) const {
  if (at.index + 1 < bins_[at.bin].size()) return Cursor{at.bin, at.index + 1};
  return Cursor{next_nonempty(at.bin + 1), 0};
}

SizeBins::Cursor SizeBins::prev(Cursor at) const {
  if (at.bin < kBins && at.index > 0) return Cursor{at.bin, at.index - 1};
  const std::uint32_t bin = prev_nonempty(at.bin);
  return Cursor{bin, static_cast<std::uint32_t>(bins_[bin].size() - 1)};
}

void SizeBins::missing(Bytes size, Addr addr) {
  throw Error("size bins: no free block of " + std::to_string(size) + " bytes at " + std::to_string(addr));
}

void SizeBins::clear() {
  for (std::uint32_t bin = next_nonempty(0); bin < kBins; bin = next_nonempty(bin + 1)) bins_[bin].clear();
  words_.fill(0);
  summary_ = 0;
  count_ = 0;
}

void SizeBins::check() const {
  std::size_t count = 0;
  for (std::uint32_t bin = 0; bin < kBins; ++bin) {
    const std::vector<Entry>& entries = bins_[bin];
    if (entries.empty() == (((words_[bin / 64] >> (bin % 64)) & 1) != 0)) throw Error("size bins: the bitmap is off");
    for (std::size_t i = 0; i < entries.size(); ++i) {
      if (bin_of(entries[i].size) != bin) throw Error("size bins: a block in the wrong bin");
      if (i > 0 && !entry_less(entries[i - 1], entries[i].size, entries[i].addr)) {
        throw Error("size bins: a bin out of order");
      }
    }
    count += entries.size();
  }
  for (std::uint32_t word = 0; word < kWords; ++word) {
    if ((words_[word] != 0) != (((summary_ >> word) & 1) != 0)) throw Error("size bins: the summary is off");
  }
  if (count != count_) throw Error("size bins: the count is off");
}

}  // namespace allocsim
