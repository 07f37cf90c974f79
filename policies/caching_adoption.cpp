// The caching family's side of replaying a recording: adopting the segments a recording
// began with, and reading the layout back, through CachingPolicy's private members.
#include "policies/caching_adoption.hpp"

#include <algorithm>
#include <optional>
#include <string>
#include <utility>

#include "policies/caching.hpp"
#include "sim/error.hpp"

namespace allocsim {

class CachingAdoption final : public RecordingAdoption {
 public:
  explicit CachingAdoption(CachingPolicy& policy) : policy_(policy) {}
  bool expandable() const override { return policy_.expandable(); }
  std::optional<Addr> adopt_segment(Bytes size, Stream stream, bool small,
                                    std::span<const HeldBlock> allocated) override {
    return policy_.adopt_segment(size, stream, small, allocated);
  }
  std::optional<Addr> adopt_expandable_range(Bytes mapped, Stream stream, bool small,
                                             std::span<const HeldBlock> allocated) override {
    return policy_.adopt_expandable_range(mapped, stream, small, allocated);
  }
  std::vector<SegmentLayout> layout() const override { return policy_.layout(); }
  bool release_segment(Addr addr) override { return policy_.release_segment(addr); }

 private:
  CachingPolicy& policy_;
};

std::unique_ptr<RecordingAdoption> caching_adoption(Policy& policy) {
  auto* const caching = dynamic_cast<CachingPolicy*>(&policy);
  if (!caching) return nullptr;
  return std::make_unique<CachingAdoption>(*caching);
}

void CachingPolicy::check_held(Bytes size, std::span<const HeldBlock> allocated) const {
  Bytes cursor = 0;
  for (const HeldBlock& held : allocated) {
    if (held.offset < cursor || held.size == 0 || held.offset + held.size > size) {
      throw Error("caching: cannot rebuild a segment of " + format_bytes(size) + ": its blocks overlap or overrun it");
    }
    if (held.offset % kMinBlockSize != 0 || held.size % kMinBlockSize != 0) {
      throw Error("caching: cannot rebuild a segment of " + format_bytes(size) + ": a block is not 512-B aligned");
    }
    cursor = held.offset + held.size;
  }
}

void CachingPolicy::hold_blocks(std::uint32_t rest, Addr base, std::span<const HeldBlock> allocated) {
  for (const HeldBlock& held : allocated) {
    std::uint32_t block = rest;
    if (const Bytes before = held.offset - (blocks_[rest].ptr - base); before > 0) {
      block = split_after(blocks_, rest, before, blocks_[rest]);
      cache(rest);  // the gap before it stays free
    }
    rest = kNone;
    if (blocks_[block].size > held.size) rest = split_after(blocks_, block, held.size, blocks_[block]);
    CachedBlock& used = blocks_[block];
    used.allocated = true;
    used.requested = held.requested;
    const std::size_t id = index_of(held.id);
    if (id >= block_of_.size()) block_of_.resize(id + 1, kNone);
    block_of_[id] = block;
    allocated_ += used.size;
    requested_ += held.requested;
    if (rest == kNone) break;
  }
  if (rest != kNone) cache(rest);
  note_peaks();
}

std::optional<Addr> CachingPolicy::adopt_segment(Bytes size, Stream stream, bool small,
                                                 std::span<const HeldBlock> allocated) {
  if (expandable_) throw Error("caching: cannot rebuild a segment of " + format_bytes(size) + ": native, where every segment is expandable");
  check_held(size, allocated);
  const auto segment = device_.malloc(size);
  if (!segment) return std::nullopt;
  reserved_ += size;
  ++segments_;
  const std::uint32_t rest =
      blocks_.add(CachedBlock{segment->addr, size, 0, kNone, kNone, stream, small, false, true, 0});
  hold_blocks(rest, segment->addr, allocated);
  return segment->addr;
}

std::vector<RecordingAdoption::SegmentLayout> CachingPolicy::layout() const {
  std::vector<SegmentLayout> segments;
  for (std::uint32_t b = 0; b < blocks_.extent(); ++b) {
    if (blocks_[b].size == 0 || blocks_[b].prev != kNone) continue;  // unused, or not a segment's first
    // An expandable segment shows as one segment per mapped range, as in PyTorch's snapshots.
    std::optional<SegmentLayout> segment;
    for (std::uint32_t c = b; c != kNone; c = blocks_[c].next) {
      if (!blocks_[c].mapped) {
        if (segment) segments.push_back(*std::exchange(segment, std::nullopt));
        continue;
      }
      if (!segment) segment = SegmentLayout{blocks_[c].ptr, 0, blocks_[c].stream, blocks_[c].small, {}};
      segment->blocks.push_back(LaidBlock{blocks_[c].ptr, blocks_[c].size, blocks_[c].allocated});
      segment->size += blocks_[c].size;
    }
    if (segment) segments.push_back(std::move(*segment));
  }
  std::sort(segments.begin(), segments.end(), [](const auto& a, const auto& b) { return a.addr < b.addr; });
  return segments;
}

// A range as PyTorch held it when a recording began: a snapshot lists its mapped prefix as
// a segment, so the pages under it are mapped (one map call, which the recorded-address
// device places at the recorded address) and the held blocks carved from that free space.
std::optional<Addr> CachingPolicy::adopt_expandable_range(Bytes mapped, Stream stream, bool small,
                                                          std::span<const HeldBlock> allocated) {
  const Bytes page = small ? kSmallPage : kLargePage;
  const auto fail = [&](const std::string& why) -> Addr {
    throw Error("caching: cannot rebuild an expandable segment of " + format_bytes(mapped) + ": " + why);
  };
  if (!expandable_) return fail("expandable, where every segment is native");
  if (mapped == 0 || mapped % page != 0) return fail("not whole " + format_bytes(page) + " pages");
  check_held(mapped, allocated);
  Pool& pool = pool_of(small);
  const std::uint32_t space = new_virtual_segment(pool, stream, small);
  if (blocks_[space].size < mapped) return fail("larger than the range the device allows");
  const std::uint32_t prefix = map_block(space, mapped);
  if (prefix == kNone) return std::nullopt;  // the range stays reserved, unmapped, as after empty_cache
  --num_device_alloc_;  // the start's pages, not a map the replay made
  uncache(prefix);
  const Addr base = blocks_[prefix].ptr;
  hold_blocks(prefix, base, allocated);
  return base;
}

bool CachingPolicy::release_segment(Addr addr) {
  if (expandable_) return false;
  for (std::uint32_t b = 0; b < blocks_.extent(); ++b) {  // rare: a linear search is enough
    const CachedBlock& block = blocks_[b];
    if (block.size == 0 || block.ptr != addr || block.prev != kNone) continue;
    if (block.allocated || !unsplit(b)) return false;
    release_block(b);
    note_peaks();
    return true;
  }
  return false;
}

}  // namespace allocsim
