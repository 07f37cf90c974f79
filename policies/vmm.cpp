#include "policies/vmm.hpp"

#include <algorithm>
#include <string>

#include "sim/error.hpp"

namespace allocsim {
namespace {

// Virtual addresses are plentiful: each policy reserves this much once and never reuses
// a range, leaving a page unmapped between ranges so that they never touch.
constexpr Bytes kVirtualSpace = Bytes{1} << 46;

}  // namespace

VmmPolicy::VmmPolicy(const Params& params, Device& device)
    : device_(device), page_(params.bytes("page")), cache_(params.boolean("cache")) {
  if (page_ < kBlockAlignment || page_ % kBlockAlignment != 0) {
    throw Error("policy vmm: page=" + format_bytes(page_) + " is not a multiple of 256 B");
  }
}

VmmPolicy::~VmmPolicy() {
  for (const Segment& page : pages_) device_.free(page);
}

Addr VmmPolicy::new_virtual_range(std::uint64_t pages) {
  const Bytes bytes = (pages + 1) * page_;  // and one page of gap
  if (virtual_end_ - virtual_next_ < bytes) {
    const Bytes space = std::max(kVirtualSpace, bytes);
    virtual_next_ = align_up(device_.reserve_addresses(space + page_), page_);
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
    device_.unmap(page_);
    ++unmaps_;
    ++free_pages_;
    return true;
  }
  if (!cached_.empty()) {
    const auto largest = std::prev(cached_.end());  // the fewest unmap calls for the most pages
    const std::uint64_t count = largest->first;
    cached_.erase(largest);
    device_.unmap(count * page_);
    ++unmaps_;
    cached_pages_ -= count;
    free_pages_ += count;
    return true;
  }
  return false;
}

bool VmmPolicy::take_pages(std::uint64_t count) {
  while (free_pages_ < count && reclaim_one()) {
  }
  while (free_pages_ < count) {
    const auto page = device_.malloc(page_);
    if (!page) return false;
    pages_.push_back(*page);
    ++free_pages_;
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
    free_pages_ -= count;
    addr = new_virtual_range(count);
    device_.map(count * page_);
    ++maps_;
    ++stitched_;
  }
  large_pages_ += count;
  allocated_ += count * page_;
  return Block{addr, count * page_, request.bytes, request.id, request.stream};
}

std::optional<Block> VmmPolicy::allocate_small(const Request& request, Bytes size) {
  auto range = small_free_.best_fit(size);
  if (!range) {
    if (!take_pages(1)) return std::nullopt;
    --free_pages_;
    const Addr vpage = new_virtual_range(1);
    device_.map(page_);
    ++maps_;
    small_pages_.emplace(vpage, 0);  // at once made non-empty below
    small_free_.add(Range{vpage, page_});
    range = Range{vpage, page_};
  }
  small_free_.take_front(*range, size);
  const Addr vpage = align_down(range->addr, page_);  // virtual pages lie on multiples of page_
  Bytes& live = small_pages_.at(vpage);
  if (live == 0) empty_small_.erase(vpage);
  live += size;
  allocated_ += size;
  return Block{range->addr, size, request.bytes, request.id, request.stream};
}

void VmmPolicy::deallocate(const Block& block, Nanos) {
  allocated_ -= block.size;
  if (block.size < page_) {
    small_free_.add(Range{block.addr, block.size});
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
    device_.unmap(block.size);
    ++unmaps_;
    free_pages_ += count;
  }
}

PolicyStats VmmPolicy::stats() const {
  // Any free page, cached range or empty small page can be stitched into one range.
  const Bytes stitchable = (free_pages_ + cached_pages_ + empty_small_.size()) * page_;
  return PolicyStats{.allocated = allocated_, .reserved = pages_.size() * page_,
                     .largest_free = std::max(stitchable, small_free_.largest())};
}

void VmmPolicy::release_cached() {
  while (reclaim_one()) {
  }
  for (; free_pages_ > 0; --free_pages_) {
    device_.free(pages_.back());
    pages_.pop_back();
  }
}

void VmmPolicy::check() const {
  small_free_.check();
  Bytes small_live = 0;
  for (const auto& [vpage, live] : small_pages_) small_live += live;
  if (small_live + large_pages_ * page_ != allocated_) throw Error("vmm: live bytes of pages != allocated");
  if (small_free_.total() + small_live != small_pages_.size() * page_) throw Error("vmm: small pages do not add up");
  std::uint64_t cached = 0;
  for (const auto& [count, addr] : cached_) cached += count;
  if (cached != cached_pages_) throw Error("vmm: cached pages miscounted");
  if (free_pages_ + large_pages_ + cached_pages_ + small_pages_.size() != pages_.size()) {
    throw Error("vmm: pages held != free + mapped");
  }
  for (Addr vpage : empty_small_) {
    if (small_pages_.at(vpage) != 0) throw Error("vmm: a small page listed empty is not");
  }
}

PolicyInspection VmmPolicy::inspect() const {
  const Bytes stitchable = (free_pages_ + cached_pages_ + empty_small_.size()) * page_;
  std::vector<PolicyStat> extra{PolicyStat{"vmm_maps", maps_, Unit::count}, PolicyStat{"vmm_unmaps", unmaps_, Unit::count},
          PolicyStat{"vmm_stitched", stitched_, Unit::count}, PolicyStat{"vmm_reused", reused_, Unit::count}};
  return PolicyInspection{stitchable, std::move(extra), "vmm: " + std::to_string(pages_.size()) + " pages of " + format_bytes(page_) + " held: " +
         std::to_string(large_pages_) + " under large blocks, " + std::to_string(small_pages_.size()) +
         " small pages, " + std::to_string(cached_pages_) + " in cached ranges, " + std::to_string(free_pages_) +
         " unmapped"};
}

}  // namespace allocsim
