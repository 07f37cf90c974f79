#include "policies/vmm.hpp"

#include <algorithm>
#include <string>

#include "sim/error.hpp"

namespace allocsim {
namespace {

// Virtual addresses are plentiful: each policy reserves this much once and never reuses
// a range, leaving a page unmapped between ranges so that they never touch.
constexpr Bytes kVirtualSpace = Bytes{1} << 40;  // 1 TiB: a reservation a GPU grants

}  // namespace

VmmPolicy::Settings VmmPolicy::settings(const Params& params) {
  const Settings settings{.page = params.bytes("page"), .cache = params.boolean("cache")};
  if (settings.page < kBlockAlignment || settings.page % kBlockAlignment != 0) {
    throw Error("policy vmm: page=" + format_bytes(settings.page) + " is not a multiple of 256 B");
  }
  return settings;
}

VmmPolicy::VmmPolicy(const Settings& settings, Device& device)
    : device_(device), page_(settings.page), cache_(settings.cache) {}

VmmPolicy::~VmmPolicy() {
  // Unmapped first, so that a real device gives the memory back at once.
  while (!mapped_.empty()) unmap_range(mapped_.begin()->first);
  for (const Segment& page : free_pages_) device_.release_physical(page);
  for (const Segment& range : reservations_) device_.release_addresses(range.addr, range.bytes);
}

void VmmPolicy::map_free_pages(Addr at, std::uint64_t count) {
  const auto first = free_pages_.end() - static_cast<std::ptrdiff_t>(count);
  device_.map(at, std::span<const Segment>(free_pages_).last(count));
  mapped_.emplace(at, pooled::vector<Segment>(first, free_pages_.end(), &pool_));
  free_pages_.erase(first, free_pages_.end());
}

void VmmPolicy::unmap_range(Addr at) {
  const auto range = mapped_.find(at);
  device_.unmap(at, range->second.size() * page_);
  free_pages_.insert(free_pages_.end(), range->second.begin(), range->second.end());
  mapped_.erase(range);
}

Addr VmmPolicy::new_virtual_range(std::uint64_t pages) {
  const Bytes bytes = (pages + 1) * page_;  // and one page of gap
  if (virtual_end_ - virtual_next_ < bytes) {
    const Bytes space = align_up(std::max(kVirtualSpace, bytes), page_);
    reservations_.push_back(Segment{device_.reserve_addresses(space + page_), space + page_});
    virtual_next_ = align_up(reservations_.back().addr, page_);
    virtual_end_ = virtual_next_ + space;
  }
  const Addr addr = virtual_next_;
  virtual_next_ += bytes;
  return addr;
}

bool VmmPolicy::reclaim_one() {
  if (!empty_small_.empty()) {
    const Addr vpage = *empty_small_.begin();
    empty_small_.erase(empty_small_.begin());
    small_free_.remove(Range{vpage, page_});
    small_pages_.erase(vpage);
    unmap_range(vpage);
    ++unmaps_;
    return true;
  }
  if (!cached_.empty()) {
    const auto largest = std::prev(cached_.end());  // the fewest unmap calls for the most pages
    const std::uint64_t count = largest->first;
    const Addr addr = largest->second;
    cached_.erase(largest);
    unmap_range(addr);
    ++unmaps_;
    cached_pages_ -= count;
    return true;
  }
  return false;
}

bool VmmPolicy::take_pages(std::uint64_t count) {
  while (free_pages_.size() < count && reclaim_one()) {
  }
  while (free_pages_.size() < count) {
    const auto page = device_.create_physical(page_);
    if (!page) return false;
    free_pages_.push_back(*page);
    ++held_pages_;
  }
  return true;
}

Allocation VmmPolicy::allocate(const Request& request) {
  const Bytes size = align_up(std::max<Bytes>(request.bytes, 1), kBlockAlignment);
  if (size < page_) return allocate_small(request, size);
  const std::uint64_t count = (size + page_ - 1) / page_;
  Addr addr = 0;
  if (const auto found = cached_.find(count); found != cached_.end()) {
    addr = found->second;
    cached_.erase(found);
    cached_pages_ -= count;
    ++reused_;
  } else {
    if (!take_pages(count)) return std::nullopt;
    addr = new_virtual_range(count);
    map_free_pages(addr, count);
    ++maps_;
    ++stitched_;
  }
  large_pages_ += count;
  allocated_ += count * page_;
  return Block{addr, count * page_, request.bytes, request.id, request.stream};
}

std::optional<Block> VmmPolicy::allocate_small(const Request& request, Bytes size) {
  SizeBins::Cursor fit = small_free_.best_fit(size);
  if (fit == SizeBins::end()) {
    if (!take_pages(1)) return std::nullopt;
    const Addr vpage = new_virtual_range(1);
    map_free_pages(vpage, 1);
    ++maps_;
    small_pages_.emplace(vpage, 0);  // at once made non-empty below
    small_free_.add(Range{vpage, page_});
    fit = small_free_.best_fit(size);  // the new page: nothing else fitted
  }
  const Range range = small_free_.take(fit, size, request.id);
  const Addr vpage = align_down(range.addr, page_);  // virtual pages lie on multiples of page_
  Bytes& live = small_pages_.at(vpage);
  if (live == 0) empty_small_.erase(vpage);
  live += size;
  allocated_ += size;
  return Block{range.addr, size, request.bytes, request.id, request.stream};
}

void VmmPolicy::deallocate(const Block& block, Nanos) {
  allocated_ -= block.size;
  if (block.size < page_) {
    small_free_.give(block.id, block.addr);
    const Addr vpage = align_down(block.addr, page_);
    Bytes& live = small_pages_.at(vpage);
    live -= block.size;
    if (live == 0) empty_small_.insert(vpage);
    return;
  }
  const std::uint64_t count = block.size / page_;
  large_pages_ -= count;
  if (cache_) {
    cached_.emplace(count, block.addr);
    cached_pages_ += count;
  } else {
    unmap_range(block.addr);
    ++unmaps_;
  }
}

PolicyStats VmmPolicy::stats() const {
  // Any free page, cached range or empty small page can be stitched into one range.
  const Bytes stitchable = (free_pages_.size() + cached_pages_ + empty_small_.size()) * page_;
  return PolicyStats{.allocated = allocated_, .reserved = held_pages_ * page_,
                     .largest_free = std::max(stitchable, small_free_.largest())};
}

void VmmPolicy::release_cached() {
  while (reclaim_one()) {
  }
  for (; !free_pages_.empty(); --held_pages_) {
    device_.release_physical(free_pages_.back());
    free_pages_.pop_back();
  }
}

void VmmPolicy::prepare(const ReplaySetup& setup) { small_free_.reserve_ids(setup.allocations); }

void VmmPolicy::check() const {
  small_free_.check("vmm", kBlockAlignment);
  small_free_.for_each_range([&](Range range, Bytes live) {
    const auto page = small_pages_.find(range.addr);
    if (range.size != page_ || page == small_pages_.end()) throw Error("vmm: free space outside the small pages");
    if (page->second != live) throw Error("vmm: a small page counts other live bytes than its blocks");
  });
  Bytes small_live = 0;
  for (const auto& [vpage, live] : small_pages_) small_live += live;
  if (small_live + large_pages_ * page_ != allocated_) throw Error("vmm: live bytes of pages != allocated");
  if (small_free_.total() + small_live != small_pages_.size() * page_) throw Error("vmm: small pages do not add up");
  std::uint64_t cached = 0;
  for (const auto& [count, addr] : cached_) cached += count;
  if (cached != cached_pages_) throw Error("vmm: cached pages miscounted");
  if (free_pages_.size() + large_pages_ + cached_pages_ + small_pages_.size() != held_pages_) {
    throw Error("vmm: pages held != free + mapped");
  }
  std::uint64_t mapped = 0;
  for (const auto& [addr, pages] : mapped_) mapped += pages.size();
  if (mapped + free_pages_.size() != held_pages_) throw Error("vmm: mapped and free pages != pages held");
  for (Addr vpage : empty_small_) {
    if (small_pages_.at(vpage) != 0) throw Error("vmm: a small page listed empty is not");
  }
}

PolicyInspection VmmPolicy::inspect(Detail detail) const {
  PolicyInspection inspection{(free_pages_.size() + cached_pages_ + empty_small_.size()) * page_,
                              {PolicyStat{"vmm_maps", maps_, Unit::count}, PolicyStat{"vmm_unmaps", unmaps_, Unit::count},
                               PolicyStat{"vmm_stitched", stitched_, Unit::count},
                               PolicyStat{"vmm_reused", reused_, Unit::count}},
                              {}};
  if (detail == Detail::full) {
    inspection.state = "vmm: " + std::to_string(held_pages_) + " pages of " + format_bytes(page_) + " held: " +
                       std::to_string(large_pages_) + " under large blocks, " + std::to_string(small_pages_.size()) +
                       " small pages, " + std::to_string(cached_pages_) + " in cached ranges, " +
                       std::to_string(free_pages_.size()) + " unmapped";
  }
  return inspection;
}

}  // namespace allocsim
