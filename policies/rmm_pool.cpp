#include "policies/rmm_pool.hpp"

#include <algorithm>
#include <string>

#include "sim/error.hpp"

namespace allocsim {
namespace {

Bytes multiple_of_256(const Params& params, std::string_view key) {
  const Bytes bytes = params.bytes(key);
  if (bytes % kBlockAlignment != 0) {
    throw Error("policy rmm-pool: " + std::string(key) + " must be a multiple of 256 B, not " + format_bytes_exact(bytes));
  }
  return bytes;
}

}  // namespace

RmmPoolPolicy::Settings RmmPoolPolicy::settings(const Params& params) {
  Settings settings;
  if (params.text("initial") != "half") settings.initial = multiple_of_256(params, "initial");
  if (params.text("maximum") != "none") settings.maximum = multiple_of_256(params, "maximum");
  if (settings.maximum && settings.initial.value_or(0) > *settings.maximum) {
    throw Error("policy rmm-pool: initial " + format_bytes(*settings.initial) + " is over maximum " +
                format_bytes(*settings.maximum));
  }
  return settings;
}

RmmPoolPolicy::RmmPoolPolicy(const Settings& settings, Device& device)
    : device_(device),
      initial_(settings.initial.value_or(align_down(device.available() / 2, kBlockAlignment))),
      maximum_(settings.maximum) {
  // A maximum under half the device's free memory is found only here, where the device is.
  if (maximum_ && initial_ > *maximum_) {
    throw Error("policy rmm-pool: initial " + format_bytes(initial_) + " is over maximum " + format_bytes(*maximum_));
  }
}

RmmPoolPolicy::~RmmPoolPolicy() {
  for (const auto& [addr, segment] : upstream_) device_.free(segment);
}

Bytes RmmPoolPolicy::size_to_grow(Bytes bytes, Bytes pool_size, std::optional<Bytes> maximum) {
  if (!maximum) return std::max(bytes, pool_size);
  const Bytes remaining = *maximum > pool_size ? align_up(*maximum - pool_size, kBlockAlignment) : 0;
  const Bytes aligned = align_up(bytes, kBlockAlignment);
  return aligned <= remaining ? std::max(aligned, remaining / 2) : 0;
}

FreeList& RmmPoolPolicy::list(Stream stream) {
  const auto [at, made] = lists_.try_emplace(stream);
  if (made) at->second.keep_apart_at(&heads_);
  return at->second;
}

Allocation RmmPoolPolicy::allocate(const Request& request) {
  if (!started_ && initial_ > 0) {
    // The constructor's try_to_expand(initial, initial), into the default stream's list.
    if (!expand(initial_, initial_, 0)) return std::nullopt;
  }
  started_ = true;
  const Bytes size = align_up(request.bytes, kBlockAlignment);
  if (size == 0) return Block{0, 0, 0, request.id, request.stream};
  // The smallest block that fits, the first (lowest address) among equals, split at the
  // front: the rest stays in the same list.
  std::optional<Range> found = list(request.stream).take_best_fit(size);
  for (auto it = lists_.begin(); !found && it != lists_.end(); ++it) {
    if (it->first == request.stream) continue;
    found = it->second.take_best_fit(size);
    if (found) ++stolen_;
  }
  // Still nothing: merge the other lists into this one, one at a time, retrying each.
  for (auto it = lists_.begin(); !found && it != lists_.end();) {
    if (it->first == request.stream) {
      ++it;
      continue;
    }
    const auto other = lists_.extract(it++);
    FreeList& mine = list(request.stream);
    other.mapped().for_each([&](Range range) { mine.add(range); });
    found = mine.take_best_fit(size);
  }
  Addr addr = found ? found->addr : 0;
  if (!found) {
    const Bytes try_bytes = size_to_grow(size, pool_size_, maximum_);
    const std::optional<Range> grown = expand(try_bytes, size, request.stream);
    if (!grown) return std::nullopt;
    // The request takes the front of the new block; the rest joins this stream's list.
    list(request.stream).take_front(*grown, size);
    addr = grown->addr;
  }
  allocated_ += size;
  return Block{addr, size, request.bytes, request.id, request.stream};
}

// try_to_expand: the upstream asked for try_bytes, halving towards min_bytes on refusal.
std::optional<Range> RmmPoolPolicy::expand(Bytes try_bytes, Bytes min_bytes, Stream stream) {
  while (try_bytes >= min_bytes && try_bytes > 0) {
    if (const auto segment = device_.malloc(try_bytes)) {
      upstream_.emplace(segment->addr, *segment);
      heads_.insert(std::upper_bound(heads_.begin(), heads_.end(), segment->addr), segment->addr);
      pool_size_ += try_bytes;
      ++growths_;
      const Range grown{segment->addr, try_bytes};
      list(stream).add(grown);
      return grown;
    }
    if (try_bytes == min_bytes) break;
    try_bytes = std::max(min_bytes, try_bytes / 2);
  }
  return std::nullopt;
}

void RmmPoolPolicy::deallocate(const Block& block, Nanos) {
  if (block.size == 0) return;
  allocated_ -= block.size;
  list(block.stream).add(Range{block.addr, block.size});
}

void RmmPoolPolicy::release_cached() {
  for (auto up = upstream_.begin(); up != upstream_.end();) {
    const Range whole{up->first, up->second.bytes};
    const auto holder = std::find_if(lists_.begin(), lists_.end(), [&](const auto& entry) { return entry.second.contains(whole); });
    if (holder == lists_.end()) {
      ++up;
      continue;
    }
    holder->second.remove(whole);
    device_.free(up->second);
    pool_size_ -= whole.size;
    heads_.erase(std::lower_bound(heads_.begin(), heads_.end(), whole.addr));
    up = upstream_.erase(up);
  }
  if (upstream_.empty()) started_ = false;  // as a new pool: the initial size again
}

Bytes RmmPoolPolicy::largest_free() const {
  Bytes largest = 0;
  for (const auto& [stream, free] : lists_) largest = std::max(largest, free.largest());
  return largest;
}

PolicyStats RmmPoolPolicy::stats() const {
  return PolicyStats{.allocated = allocated_,
                     .reserved = pool_size_,
                     .largest_free = largest_free(),
                     .limit = maximum_.value_or(0)};
}

PolicyInspection RmmPoolPolicy::inspect(Detail detail) const {
  PolicyInspection inspection;
  for (const auto& [addr, segment] : upstream_) {
    for (const auto& [stream, free] : lists_) {
      if (free.contains(Range{addr, segment.bytes})) inspection.releasable += segment.bytes;
    }
  }
  inspection.extra = {{"pool_size", pool_size_, Unit::bytes},
                      {"pool_growths", growths_, Unit::count},
                      {"blocks_from_other_streams", stolen_, Unit::count}};
  if (detail == Detail::full) {
    std::size_t blocks = 0;
    for (const auto& [stream, free] : lists_) blocks += free.count();
    inspection.state = "RMM pool: pool_size " + format_bytes(pool_size_) + " in " + std::to_string(upstream_.size()) +
                       " upstream blocks, " + std::to_string(blocks) + " free blocks in " +
                       std::to_string(lists_.size()) + " stream lists, largest " + format_bytes(stats().largest_free);
  }
  return inspection;
}

void RmmPoolPolicy::check() const {
  std::vector<Addr> heads;
  for (const auto& [addr, segment] : upstream_) heads.push_back(addr);
  if (heads != heads_) throw Error("policy rmm-pool: the upstream blocks' addresses out of step");
  std::map<Addr, Bytes> all;
  for (const auto& [stream, free] : lists_) {
    free.check();  // coalesced everywhere but at the start of an upstream block
    free.for_each([&](Range range) {
      if (!all.emplace(range.addr, range.size).second) throw Error("policy rmm-pool: a block in two lists");
    });
  }
  Bytes free = 0;
  Addr end = 0;
  for (const auto& [addr, size] : all) {
    if (addr < end) throw Error("policy rmm-pool: free blocks overlap");
    end = addr + size;
    auto up = upstream_.upper_bound(addr);
    if (up == upstream_.begin() || end > std::prev(up)->first + std::prev(up)->second.bytes) {
      throw Error("policy rmm-pool: a free block outside its upstream block");
    }
    free += size;
  }
  if (free + allocated_ != pool_size_) throw Error("policy rmm-pool: free + allocated != pool_size");
}

}  // namespace allocsim
