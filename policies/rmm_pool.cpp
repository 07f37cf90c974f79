#include "policies/rmm_pool.hpp"

#include <string>

#include "sim/error.hpp"

namespace allocsim {
namespace {

constexpr Bytes kRmmAlignment = 256;  // CUDA_ALLOCATION_ALIGNMENT

Bytes multiple_of_256(const Params& params, std::string_view key) {
  const Bytes bytes = params.bytes(key);
  if (bytes % kRmmAlignment != 0) {
    throw Error("policy rmm-pool: " + std::string(key) + " must be a multiple of 256 B, not " + format_bytes_exact(bytes));
  }
  return bytes;
}

}  // namespace

RmmPoolPolicy::RmmPoolPolicy(const Params& params, Device& device)
    : device_(device),
      initial_(params.text("initial") == "half" ? align_down(device.available() / 2, kRmmAlignment)
                                                : multiple_of_256(params, "initial")) {
  if (params.text("maximum") != "none") maximum_ = multiple_of_256(params, "maximum");
  if (maximum_ && initial_ > *maximum_) {
    throw Error("policy rmm-pool: initial " + format_bytes(initial_) + " is over maximum " + format_bytes(*maximum_));
  }
}

RmmPoolPolicy::~RmmPoolPolicy() {
  for (const auto& [addr, segment] : upstream_) device_.free(segment);
}

Bytes RmmPoolPolicy::size_to_grow(Bytes bytes, Bytes pool_size, std::optional<Bytes> maximum) {
  if (!maximum) return std::max(bytes, pool_size);
  const Bytes remaining = *maximum > pool_size ? align_up(*maximum - pool_size, kRmmAlignment) : 0;
  const Bytes aligned = align_up(bytes, kRmmAlignment);
  return aligned <= remaining ? std::max(aligned, remaining / 2) : 0;
}

Allocation RmmPoolPolicy::allocate(const Request& request) {
  if (!started_ && initial_ > 0) {
    // The constructor's try_to_expand(initial, initial), into the default stream's list.
    if (!expand(initial_, initial_, 0)) return std::nullopt;
  }
  started_ = true;
  const Bytes size = align_up(request.bytes, kRmmAlignment);
  if (size == 0) return Block{0, 0, 0, request.id, request.stream};
  FreeList& own = lists_[request.stream];
  std::optional<Addr> addr = take_best_fit(own, size);
  for (auto it = lists_.begin(); !addr && it != lists_.end(); ++it) {
    if (it->first == request.stream) continue;
    addr = take_best_fit(it->second, size);
    if (addr) ++stolen_;
  }
  // Still nothing: merge the other lists into this one, one at a time, retrying each.
  for (auto it = lists_.begin(); !addr && it != lists_.end();) {
    if (it->first == request.stream) {
      ++it;
      continue;
    }
    FreeList other = std::move(it->second);
    it = lists_.erase(it);
    FreeList& mine = lists_[request.stream];
    for (const auto& [at, block] : other.blocks) {
      free_sizes_.erase(block.size, at);
      insert(mine, at, block);
    }
    addr = take_best_fit(mine, size);
  }
  if (!addr) {
    const Bytes try_bytes = size_to_grow(size, pool_size_, maximum_);
    addr = expand(try_bytes, size, request.stream);
    if (!addr) return std::nullopt;
    // The request takes the front of the new block; the rest joins this stream's list.
    FreeList& mine = lists_[request.stream];
    const auto grown = mine.blocks.find(*addr);
    const FreeBlock block = grown->second;
    erase(mine, grown);
    if (block.size > size) insert(mine, *addr + size, FreeBlock{block.size - size, false});
  }
  allocated_ += size;
  return Block{*addr, size, request.bytes, request.id, request.stream};
}

// The smallest block that fits, the first (lowest address) among equals, split at the
// front: the rest stays in the same list.
std::optional<Addr> RmmPoolPolicy::take_best_fit(FreeList& list, Bytes size) {
  const SizeBins::Cursor fit = list.by_size.lower_bound(size);
  if (fit == SizeBins::end()) return std::nullopt;
  const auto best = list.blocks.find(list.by_size[fit].addr);
  const Addr addr = best->first;
  const FreeBlock block = best->second;
  erase(list, best);
  if (block.size > size) insert(list, addr + size, FreeBlock{block.size - size, false});
  return addr;
}

// try_to_expand: the upstream asked for try_bytes, halving towards min_bytes on refusal.
std::optional<Addr> RmmPoolPolicy::expand(Bytes try_bytes, Bytes min_bytes, Stream stream) {
  while (try_bytes >= min_bytes && try_bytes > 0) {
    if (const auto segment = device_.malloc(try_bytes)) {
      upstream_.emplace(segment->addr, *segment);
      pool_size_ += try_bytes;
      ++growths_;
      insert(lists_[stream], segment->addr, FreeBlock{try_bytes, true});
      return segment->addr;
    }
    if (try_bytes == min_bytes) break;
    try_bytes = std::max(min_bytes, try_bytes / 2);
  }
  return std::nullopt;
}

void RmmPoolPolicy::deallocate(const Block& block, Nanos) {
  if (block.size == 0) return;
  allocated_ -= block.size;
  insert(lists_[block.stream], block.addr, FreeBlock{block.size, upstream_.contains(block.addr)});
}

void RmmPoolPolicy::insert(FreeList& list, Addr addr, FreeBlock block) {
  Blocks& blocks = list.blocks;
  auto next = blocks.lower_bound(addr);
  if (next != blocks.end() && !next->second.head && addr + block.size == next->first) {
    block.size += next->second.size;
    erase(list, next);
    next = blocks.lower_bound(addr);
  }
  if (next != blocks.begin() && !block.head) {
    const auto before = std::prev(next);
    if (before->first + before->second.size == addr) {
      addr = before->first;
      block = FreeBlock{before->second.size + block.size, before->second.head};
      erase(list, before);
    }
  }
  blocks.emplace(addr, block);
  list.by_size.insert({block.size, addr, 0});
  free_sizes_.insert({block.size, addr, 0});
}

void RmmPoolPolicy::erase(FreeList& list, Blocks::iterator it) {
  free_sizes_.erase(it->second.size, it->first);
  list.by_size.erase(it->second.size, it->first);
  list.blocks.erase(it);
}

void RmmPoolPolicy::release_cached() {
  for (auto up = upstream_.begin(); up != upstream_.end();) {
    bool released = false;
    for (auto& [stream, list] : lists_) {
      const auto it = list.blocks.find(up->first);
      if (it == list.blocks.end() || it->second.size != up->second.bytes) continue;
      erase(list, it);
      device_.free(up->second);
      pool_size_ -= up->second.bytes;
      up = upstream_.erase(up);
      released = true;
      break;
    }
    if (!released) ++up;
  }
  if (upstream_.empty()) started_ = false;  // as a new pool: the initial size again
}

PolicyStats RmmPoolPolicy::stats() const {
  return PolicyStats{.allocated = allocated_,
                     .reserved = pool_size_,
                     .largest_free = free_sizes_.empty() ? 0 : free_sizes_.back().size,
                     .limit = maximum_.value_or(0)};
}

PolicyInspection RmmPoolPolicy::inspect(Detail detail) const {
  PolicyInspection inspection;
  for (const auto& [addr, segment] : upstream_) {
    for (const auto& [stream, list] : lists_) {
      const auto it = list.blocks.find(addr);
      if (it != list.blocks.end() && it->second.size == segment.bytes) inspection.releasable += segment.bytes;
    }
  }
  inspection.extra = {{"pool_size", pool_size_, Unit::bytes},
                      {"pool_growths", growths_, Unit::count},
                      {"blocks_from_other_streams", stolen_, Unit::count}};
  if (detail == Detail::full) {
    std::size_t blocks = 0;
    for (const auto& [stream, list] : lists_) blocks += list.blocks.size();
    inspection.state = "RMM pool: pool_size " + format_bytes(pool_size_) + " in " + std::to_string(upstream_.size()) +
                       " upstream blocks, " + std::to_string(blocks) + " free blocks in " +
                       std::to_string(lists_.size()) + " stream lists, largest " + format_bytes(stats().largest_free);
  }
  return inspection;
}

void RmmPoolPolicy::check() const {
  std::map<Addr, FreeBlock> all;
  for (const auto& [stream, list] : lists_) {
    if (list.by_size.size() != list.blocks.size()) throw Error("policy rmm-pool: a list's size index out of step");
    for (auto it = list.blocks.begin(); it != list.blocks.end(); ++it) {
      if (it->second.head != upstream_.contains(it->first)) throw Error("policy rmm-pool: wrong head flag");
      const auto next = std::next(it);
      if (next != list.blocks.end() && !next->second.head && it->first + it->second.size == next->first) {
        throw Error("policy rmm-pool: two contiguous free blocks not coalesced");
      }
      if (!all.emplace(it->first, it->second).second) throw Error("policy rmm-pool: a block in two lists");
    }
  }
  Bytes free = 0;
  Addr end = 0;
  for (const auto& [addr, block] : all) {
    if (addr < end) throw Error("policy rmm-pool: free blocks overlap");
    end = addr + block.size;
    auto up = upstream_.upper_bound(addr);
    if (up == upstream_.begin() || end > std::prev(up)->first + std::prev(up)->second.bytes) {
      throw Error("policy rmm-pool: a free block outside its upstream block");
    }
    free += block.size;
  }
  if (free + allocated_ != pool_size_) throw Error("policy rmm-pool: free + allocated != pool_size");
  if (free_sizes_.size() != all.size()) throw Error("policy rmm-pool: size index out of step");
}

}  // namespace allocsim
