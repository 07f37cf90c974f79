#include "policies/rmm_binning.hpp"

#include <algorithm>
#include <string>

#include "sim/error.hpp"

namespace allocsim {

RmmBinningPolicy::Settings RmmBinningPolicy::settings(const Params& params) {
  Settings settings{.blocks = params.count("blocks"), .exponents = std::nullopt};
  if (settings.blocks == 0) throw Error("policy rmm-binning: blocks must be at least 1");
  const bool no_min = params.text("min_exp") == "none";
  const bool no_max = params.text("max_exp") == "none";
  if (no_min != no_max) throw Error("policy rmm-binning: give both min_exp and max_exp, or neither");
  if (no_min) return settings;
  const std::uint64_t min_exp = params.count("min_exp");
  const std::uint64_t max_exp = params.count("max_exp");
  if (min_exp > max_exp || max_exp > 40) {
    throw Error("policy rmm-binning: need min_exp <= max_exp <= 40, not " + std::to_string(min_exp) + " and " +
                std::to_string(max_exp));
  }
  settings.exponents = {min_exp, max_exp};
  return settings;
}

RmmBinningPolicy::RmmBinningPolicy(const Settings& settings, Device& device)
    : device_(device), blocks_per_chunk_(settings.blocks) {
  if (!settings.exponents) return;
  for (std::uint64_t exp = settings.exponents->first; exp <= settings.exponents->second; ++exp) {
    bins_.push_back(Bin{align_up(Bytes{1} << exp, kBlockAlignment), {}, {}, 0});
  }
}

RmmBinningPolicy::~RmmBinningPolicy() {
  for (const Bin& bin : bins_) {
    for (const Segment& chunk : bin.chunks) device_.free(chunk);
  }
}

// The smallest bin at least the requested size (the map's lower_bound in RMM).
RmmBinningPolicy::Bin* RmmBinningPolicy::bin_for(Bytes requested) {
  const auto it = std::find_if(bins_.begin(), bins_.end(), [&](const Bin& bin) { return bin.block_size >= requested; });
  return it == bins_.end() ? nullptr : &*it;
}

Allocation RmmBinningPolicy::allocate(const Request& request) {
  if (request.bytes == 0) return Block{0, 0, 0, request.id, request.stream};
  Bin* bin = bin_for(request.bytes);
  if (!bin) {
    const auto segment = device_.malloc(request.bytes);
    if (!segment) return std::nullopt;
    allocated_ += segment->bytes;
    direct_ += segment->bytes;
    return Block{segment->addr, segment->bytes, request.bytes, request.id, request.stream};
  }
  std::deque<Addr>* list = &bin->free[request.stream];
  if (list->empty()) {
    for (auto& [stream, other] : bin->free) {
      if (!other.empty()) {
        list = &other;
        break;
      }
    }
  }
  if (list->empty()) {
    const auto chunk = device_.malloc(bin->block_size * blocks_per_chunk_);
    if (!chunk) return std::nullopt;
    bin->chunks.push_back(*chunk);
    reserved_ += chunk->bytes;
    list = &bin->free[request.stream];
    for (Bytes i = 0; i < blocks_per_chunk_; ++i) list->push_back(chunk->addr + i * bin->block_size);
  }
  const Addr addr = list->front();
  list->pop_front();
  ++bin->out;
  allocated_ += bin->block_size;
  return Block{addr, bin->block_size, request.bytes, request.id, request.stream};
}

void RmmBinningPolicy::deallocate(const Block& block, Nanos) {
  if (block.size == 0) return;
  allocated_ -= block.size;
  Bin* bin = bin_for(block.requested);
  if (!bin) {
    direct_ -= block.size;
    device_.free(Segment{block.addr, block.size});
    return;
  }
  bin->free[block.stream].push_back(block.addr);
  --bin->out;
}

void RmmBinningPolicy::release_cached() {
  for (Bin& bin : bins_) {
    if (bin.out != 0) continue;
    for (const Segment& chunk : bin.chunks) {
      device_.free(chunk);
      reserved_ -= chunk.bytes;
    }
    bin.chunks.clear();
    bin.free.clear();
  }
}

PolicyStats RmmBinningPolicy::stats() const {
  Bytes largest = 0;
  for (const Bin& bin : bins_) {
    const bool any = std::any_of(bin.free.begin(), bin.free.end(), [](const auto& entry) { return !entry.second.empty(); });
    if (any) largest = std::max(largest, bin.block_size);
  }
  return PolicyStats{.allocated = allocated_, .reserved = reserved_ + direct_, .largest_free = largest, .limit = 0};
}

PolicyInspection RmmBinningPolicy::inspect(Detail detail) const {
  PolicyInspection inspection;
  std::uint64_t chunks = 0;
  for (const Bin& bin : bins_) {
    chunks += bin.chunks.size();
    if (bin.out == 0) {
      for (const Segment& chunk : bin.chunks) inspection.releasable += chunk.bytes;
    }
  }
  inspection.extra = {{"bin_chunks", chunks, Unit::count}, {"bin_bytes", reserved_, Unit::bytes}};
  if (detail == Detail::full) {
    inspection.state = "RMM binning: " + std::to_string(bins_.size()) + " bins holding " + format_bytes(reserved_) +
                       " in " + std::to_string(chunks) + " chunks; " + format_bytes(direct_) + " upstream directly";
  }
  return inspection;
}

void RmmBinningPolicy::check() const {
  Bytes in_bins = 0;
  Bytes out = 0;
  for (const Bin& bin : bins_) {
    std::size_t free = 0;
    for (const auto& [stream, list] : bin.free) free += list.size();
    if (free + bin.out != bin.chunks.size() * blocks_per_chunk_) {
      throw Error("policy rmm-binning: free + out != the blocks of a bin's chunks");
    }
    for (const Segment& chunk : bin.chunks) in_bins += chunk.bytes;
    out += bin.out * bin.block_size;
  }
  if (in_bins != reserved_ || out + direct_ != allocated_) throw Error("policy rmm-binning: counters out of step");
}

}  // namespace allocsim
