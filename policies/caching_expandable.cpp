// The caching allocator's expandable segments (expandable_segments:True): instead of one
// cudaMalloc per segment, each stream and pool reserves address space for 1.125 x the
// device (cuMemAddressReserve) and maps physical pages into it as blocks need them (one
// cuMemCreate per page, then one device map call for the pages a block needs, charged the
// device's map cost as PyTorch pays cuMemMap + cuMemSetAccess); releasing unmaps the
// whole pages inside free blocks (one unmap call) and releases them (cuMemRelease).
// Mapped and unmapped space never merge; unmapped space sits in the pool's sorted `unmapped` vector.
#include <algorithm>

#include "policies/caching.hpp"
#include "sim/error.hpp"

namespace allocsim {
namespace {

// The page sizes are the segment sizes of the native pools (kSmallBuffer, kLargeBuffer).

}  // namespace

std::size_t CachingPolicy::virtual_segment_of(Addr ptr) const {
  const auto after = std::upper_bound(virtual_segments_.begin(), virtual_segments_.end(), ptr,
                                      [](Addr addr, const VirtualSegment& segment) { return addr < segment.base; });
  return static_cast<std::size_t>(after - virtual_segments_.begin()) - 1;
}

// The lowest-addressed unmapped space of this stream that, with the free mapped block
// before it and the free blocks after, offers `size` bytes; or a new segment's space.
std::uint32_t CachingPolicy::find_expandable_block(Pool& pool, Stream stream, Bytes size, bool small) {
  const auto room_from = [&](std::uint32_t b) {
    Bytes bytes = 0;
    for (; bytes < size && b != kNone && !blocks_[b].allocated; b = blocks_[b].next) bytes += blocks_[b].size;
    return bytes >= size;
  };
  for (auto it = std::lower_bound(pool.unmapped.begin(), pool.unmapped.end(), UnmappedKey{0, 0, stream});
       it != pool.unmapped.end() && it->stream == stream; ++it) {
    std::uint32_t candidate = it->block;
    if (const std::uint32_t prev = blocks_[candidate].prev; prev != kNone && !blocks_[prev].allocated) {
      candidate = prev;
    }
    if (room_from(candidate)) return candidate;
  }
  return new_virtual_segment(pool, stream, small);
}

// A new range for this stream and pool, all of it unmapped space.
std::uint32_t CachingPolicy::new_virtual_segment(Pool& pool, Stream stream, bool small) {
  const Bytes page = small ? kSmallPage : kLargePage;
  const Bytes pages = (device_.capacity() / 8 * 9 + page - 1) / page;
  // Aligned to the 2 MiB VMM granularity, not to the page: PyTorch leaves the alignment of
  // cuMemAddressReserve to the driver, so a large pool's range need not start on 20 MiB
  // (and a replay at the recorded addresses must not move it there). 2 MiB more, to align.
  const Bytes reserved_bytes = pages * page + kSmallPage;
  const Addr reserved_at = device_.reserve_addresses(reserved_bytes);
  const Addr base = align_up(reserved_at, kSmallPage);
  // Kept by base address: a real device may hand out ranges in any order.
  const auto at = std::lower_bound(virtual_segments_.begin(), virtual_segments_.end(), base,
                                   [](const VirtualSegment& segment, Addr addr) { return segment.base < addr; });
  virtual_segments_.insert(at, VirtualSegment{base, page, std::vector<Addr>(pages, 0), reserved_at, reserved_bytes});
  const std::uint32_t block = blocks_.add(CachedBlock{base, pages * page, 0, kNone, kNone, stream, small, false, false, 0});
  pool.add_unmapped(unmapped_key_of(block));
  ++segments_;
  note_peaks();
  return block;
}

// Maps the pages under the first `size` bytes of unmapped `block`; what is left stays
// unmapped after it. Returns the mapped block, merged with its free neighbours, or kNone
// when the device has no room for a page (the pages mapped by this call are released).
std::uint32_t CachingPolicy::map_block(std::uint32_t block, Bytes size) {
  VirtualSegment& segment = virtual_segments_[virtual_segment_of(blocks_[block].ptr)];
  const Bytes offset = blocks_[block].ptr - segment.base;
  const std::size_t first = offset / segment.page;
  const std::size_t end = (offset + size + segment.page - 1) / segment.page;
  std::vector<Segment>& created = created_;
  created.clear();
  for (std::size_t p = first; p < end; ++p) {
    const auto page = device_.create_physical(segment.page);
    if (!page) {
      for (const Segment& made : created) device_.release_physical(made);
      return kNone;
    }
    created.push_back(*page);
  }
  device_.map(segment.base + first * segment.page, created);
  for (std::size_t p = first; p < end; ++p) segment.pages[p] = created[p - first].addr;
  const Bytes mapped = (end - first) * segment.page;
  Pool& pool = pool_of(blocks_[block].small);
  pool.erase_unmapped(unmapped_key_of(block));
  if (mapped < blocks_[block].size) pool.add_unmapped(unmapped_key_of(split_after(blocks_, block, mapped, blocks_[block])));
  blocks_[block].mapped = true;
  block = absorb_free_neighbours(block);
  cache(block);
  reserved_ += mapped;
  ++num_device_alloc_;
  note_peaks();
  return block;
}

std::uint32_t CachingPolicy::try_allocate_expandable_block(Pool& pool, Stream stream, Bytes size, bool small) {
  std::uint32_t candidate = find_expandable_block(pool, stream, size, small);
  if (!blocks_[candidate].mapped) candidate = map_block(candidate, std::min(blocks_[candidate].size, size));
  // Now free mapped space followed by unmapped space: map more of it until it is enough.
  while (candidate != kNone && blocks_[candidate].size < size) {
    const std::uint32_t next = blocks_[candidate].next;
    candidate = map_block(next, std::min(size - blocks_[candidate].size, blocks_[next].size));
  }
  if (candidate != kNone) uncache(candidate);
  return candidate;
}

// Unmaps the whole pages inside free `block`; the partial pages at its ends stay mapped
// as free blocks. A segment left wholly unmapped is given up.
void CachingPolicy::unmap_block(std::uint32_t block) {
  VirtualSegment& segment = virtual_segments_[virtual_segment_of(blocks_[block].ptr)];
  const Bytes offset = blocks_[block].ptr - segment.base;
  const auto [first, end] = whole_pages(segment, block);
  if (first >= end) return;
  uncache(block);
  if (const Bytes before = first * segment.page - offset; before > 0) {
    const std::uint32_t middle = split_after(blocks_, block, before, blocks_[block]);
    cache(block);
    block = middle;
  }
  const Bytes unmapped = (end - first) * segment.page;
  if (blocks_[block].size > unmapped) cache(split_after(blocks_, block, unmapped, blocks_[block]));
  device_.unmap(segment.base + first * segment.page, unmapped);
  for (std::size_t p = first; p < end; ++p) {
    device_.release_physical(Segment{std::exchange(segment.pages[p], 0), segment.page});
  }
  blocks_[block].mapped = false;
  block = absorb_free_neighbours(block);
  Pool& pool = pool_of(blocks_[block].small);
  reserved_ -= unmapped;
  ++num_device_free_;
  if (!unsplit(block)) {
    pool.add_unmapped(unmapped_key_of(block));
    return;
  }
  device_.release_addresses(segment.reserved_at, segment.reserved_bytes);
  virtual_segments_.erase(virtual_segments_.begin() + static_cast<std::ptrdiff_t>(virtual_segment_of(segment.base)));
  --segments_;
  retire(block);
}

std::pair<std::size_t, std::size_t> CachingPolicy::whole_pages(const VirtualSegment& segment,
                                                               std::uint32_t block) const {
  const Bytes offset = blocks_[block].ptr - segment.base;
  return {(offset + segment.page - 1) / segment.page, (offset + blocks_[block].size) / segment.page};
}

Bytes CachingPolicy::whole_free_pages(std::uint32_t block) const {
  const VirtualSegment& segment = virtual_segments_[virtual_segment_of(blocks_[block].ptr)];
  const auto [first, end] = whole_pages(segment, block);
  return end > first ? (end - first) * segment.page : 0;
}

// Every page under mapped space is mapped, every page under unmapped space is not, and
// reserved bytes are the mapped pages.
void CachingPolicy::check_pages() const {
  if (!expandable_) return;
  Bytes mapped_pages = 0;
  for (const VirtualSegment& segment : virtual_segments_) {
    mapped_pages += segment.page * static_cast<Bytes>(std::count_if(segment.pages.begin(), segment.pages.end(),
                                                                     [](Addr page) { return page != 0; }));
  }
  for (std::uint32_t b = 0; b < blocks_.extent(); ++b) {
    const CachedBlock& block = blocks_[b];
    if (block.size == 0) continue;
    const VirtualSegment& segment = virtual_segments_[virtual_segment_of(block.ptr)];
    const Bytes offset = block.ptr - segment.base;
    if (!block.mapped && (offset % segment.page != 0 || block.size % segment.page != 0)) {
      throw Error("caching: unmapped space not on page boundaries");
    }
    for (Bytes p = offset / segment.page; p * segment.page < offset + block.size; ++p) {
      if ((segment.pages[p] != 0) != block.mapped) throw Error("caching: a page's mapping disagrees with its block");
    }
  }
  if (mapped_pages != reserved_) throw Error("caching: mapped pages and reserved bytes disagree");
}

}  // namespace allocsim
