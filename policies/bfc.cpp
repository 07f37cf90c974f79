#include "policies/bfc.hpp"

#include <algorithm>
#include <bit>
#include <string>

#include "policies/common/memory_cap.hpp"
#include "sim/error.hpp"

namespace allocsim {
namespace {

constexpr Bytes kMinAllocation = 256;
constexpr Bytes kDefaultMaxInternalFragmentation = 128_MiB;
constexpr Bytes kInitialGrowthRegion = 2_MiB;

Bytes rounded_bytes(Bytes bytes) { return align_up(bytes, kMinAllocation); }

// gpu_device.cc's SingleVirtualDeviceMemoryLimit, and gpu_helpers.cc's fraction of total.
BfcPolicy::Limit compute_limit(const BfcPolicy::Settings& settings, const Device& device) {
  if (settings.limit) return {*settings.limit, LimitKind::memory_limit, 0};
  const MemoryCap fraction = MemoryCap::fraction_of_total(settings.fraction, device, "policy bfc");
  const Bytes available = device.available();
  BfcPolicy::Limit limit{available, LimitKind::device, 0};
  if (fraction.capped()) {
    limit = {fraction.bytes(), LimitKind::fraction, 0};
  } else if (const Bytes reserve = tf_min_system_memory(available, device.compute_capability() / 10);
             reserve < available) {
    limit = {available - reserve, LimitKind::system_reserve, reserve};
  }
  // gpu_system_memory_size_in_mb is applied last, and only when it fits.
  if (settings.reserve && *settings.reserve <= available) {
    limit = {available - *settings.reserve, LimitKind::system_reserve, *settings.reserve};
  }
  return limit;
}

BfcPolicy::Version version_of(std::string_view version) {
  if (version == "2023") return BfcPolicy::Version::v2023;
  if (version == "2024-02") return BfcPolicy::Version::v2024_02;
  if (version == "2025-10") return BfcPolicy::Version::v2025_10;
  throw Error("policy bfc: version=" + std::string(version) + " is not 2023, 2024-02 or 2025-10");
}

std::optional<Bytes> memory_limit(const Params& params) {
  const std::string_view text = params.text("limit");
  if (text == "auto") return std::nullopt;
  const Bytes limit = params.bytes("limit");
  if (limit == 0) throw Error("policy bfc: limit=0 leaves no memory to allocate (auto is TensorFlow's own rule)");
  // TensorFlow's memory_limit counts MB: a bare 4096 meant as that is 4 KiB here.
  if (limit < 1_MiB && text.find_first_not_of("0123456789") == std::string_view::npos) {
    throw Error("policy bfc: limit=" + std::string(text) + " is " + format_bytes(limit) +
                "; with a unit it is clear (limit=" + std::string(text) + "MiB), or give TensorFlow's MB as memory_limit_mb=" +
                std::string(text));
  }
  return limit;
}

}  // namespace

std::size_t bfc_bin_for(Bytes rounded) {
  const Bytes units = std::max(rounded, kMinAllocation) >> 8;
  return std::min<std::size_t>(20, std::bit_width(units) - 1);
}

Bytes bfc_backpedal(Bytes bytes) {
  // TensorFlow multiplies a size_t by a float constant: the product is a float, with 24
  // significant bits, truncated back to an integer.
  return rounded_bytes(static_cast<Bytes>(static_cast<float>(bytes) * 0.9f));
}

Bytes tf_min_system_memory(Bytes available, int cc_major) {
  if (available < 2_GiB) return 225_MiB;
  if (cc_major <= 6) return 500_MiB;
  if (cc_major <= 7) return 1050_MiB;
  if (cc_major <= 8) return 1536_MiB;
  return 1800_MiB;
}

BfcPolicy::Settings BfcPolicy::settings(const Params& params) {
  Settings settings{
      .growth = params.boolean("growth"),
      .limit = memory_limit(params),
      .fraction = params.number("fraction"),
      .reserve = params.text("reserve") == "auto" ? std::nullopt : std::optional(params.bytes("reserve")),
      .gc = params.boolean("gc"),
      .frag_fraction = params.number("frag_fraction"),
      .version = version_of(params.text("version")),
  };
  MemoryCap::check_fraction(settings.fraction, "policy bfc");
  if (settings.frag_fraction < 0 || settings.frag_fraction > 1) {
    throw Error("policy bfc: frag_fraction must be between 0 and 1");
  }
  return settings;
}

BfcPolicy::BfcPolicy(const Settings& settings, Device& device)
    : device_(device),
      limit_rule_(compute_limit(settings, device)),
      limit_(limit_rule_.bytes),
      growth_(settings.growth),
      gc_(settings.gc),
      version_(settings.version) {
  max_internal_fragmentation_ = settings.frag_fraction > 0
                                    ? static_cast<Bytes>(settings.frag_fraction * static_cast<double>(limit_))
                                    : kDefaultMaxInternalFragmentation;
  region_target_ = growth_ ? rounded_bytes(std::min(limit_, kInitialGrowthRegion)) : rounded_bytes(limit_);
}

BfcPolicy::~BfcPolicy() {
  for (const Region& region : regions_) device_.free(region.segment);
}

Allocation BfcPolicy::allocate(const Request& request) {
  if (request.bytes == 0) return Block{0, 0, 0, request.id, request.stream};  // TensorFlow: nullptr, no OOM
  if (!hang_.empty()) return Allocation::hung(hang_);
  const Bytes rounded = rounded_bytes(request.bytes);
  std::optional<Fit> fit = find_chunk(rounded);
  if (!fit && extend(rounded)) fit = find_chunk(rounded);
  if (!fit && hang_.empty() && deallocate_free_regions(rounded) && extend(rounded)) fit = find_chunk(rounded);
  if (!fit) return hang_.empty() ? Allocation(std::nullopt) : Allocation::hung(hang_);
  const std::uint32_t chunk = use_chunk(*fit, rounded, request);
  const Chunk& used = chunks_[chunk];
  return Block{used.ptr, used.size, request.bytes, request.id, request.stream};
}

std::optional<BfcPolicy::Fit> BfcPolicy::find_chunk(Bytes rounded) const {
  const Fit fit = free_chunks_.lower_bound(rounded);
  if (fit == SizeBins::end()) return std::nullopt;
  return fit;
}

inline std::uint32_t BfcPolicy::use_chunk(Fit fit, Bytes rounded, const Request& request) {
  const std::uint32_t chunk = free_chunks_[fit].handle;
  free_chunks_.erase(fit);
  const Bytes size = chunks_[chunk].size;
  if (size >= 2 * rounded || size - rounded >= max_internal_fragmentation_) {
    insert_into_bin(split_after(chunks_, chunk, rounded, chunks_[chunk]));
  }
  Chunk& used = chunks_[chunk];
  used.in_use = true;
  touch(used);
  used.requested = request.bytes;
  const std::size_t id = index_of(request.id);
  if (id >= chunk_of_.size()) chunk_of_.resize(std::max(id + 1, chunk_of_.size() * 2), kNone);
  chunk_of_[id] = chunk;
  ++num_allocs_;
  bytes_in_use_ += used.size;
  peak_bytes_in_use_ = std::max(peak_bytes_in_use_, bytes_in_use_);
  largest_alloc_size_ = std::max(largest_alloc_size_, used.size);
  return chunk;
}

void BfcPolicy::prepare(const ReplaySetup& setup) {
  if (setup.allocations > chunk_of_.size()) chunk_of_.resize(setup.allocations, kNone);
}

void BfcPolicy::deallocate(const Block& block, Nanos) {
  if (block.size == 0) return;
  const std::size_t id = index_of(block.id);
  std::uint32_t chunk = id < chunk_of_.size() ? chunk_of_[id] : kNone;
  if (chunk == kNone || !chunks_[chunk].in_use || chunks_[chunk].ptr != block.addr) {
    throw Error("bfc: free of a block it did not hand out (id " + std::to_string(id) + ")");
  }
  chunk_of_[id] = kNone;
  chunks_[chunk].in_use = false;
  bytes_in_use_ -= chunks_[chunk].size;
  // Next first, then previous, as TryToCoalesce does.
  if (const std::uint32_t next = chunks_[chunk].next; next != kNone && !chunks_[next].in_use) {
    remove_from_bin(next);
    merge(chunk, next);
  }
  if (const std::uint32_t prev = chunks_[chunk].prev; prev != kNone && !chunks_[prev].in_use) {
    remove_from_bin(prev);
    merge(prev, chunk);
    chunk = prev;
  }
  insert_into_bin(chunk);
}

void BfcPolicy::merge(std::uint32_t left, std::uint32_t right) {
  merge_next(chunks_, left, right);
  chunks_.remove(right);
}

bool BfcPolicy::extend(Bytes rounded) {
  const Bytes available = align_down(limit_ - pool_bytes_, kMinAllocation);
  if (rounded > available) return false;
  bool increased = false;
  while (rounded > region_target_) {
    if (region_target_ == 0) {
      hang_ = "the growth target doubled past 2^64 and wrapped to 0, so the loop that grows it never ends";
      return false;
    }
    region_target_ *= 2;
    increased = true;
  }
  Bytes bytes = std::min<Bytes>(region_target_, available);
  std::optional<Segment> segment = device_.malloc(bytes);
  if (!segment) {
    if (version_ == Version::v2023) {
      if (started_backpedal_) return false;  // backpedals once per allocator lifetime
      started_backpedal_ = true;
    }
    while (!segment) {
      Bytes next = bfc_backpedal(bytes);
      if (next >= bytes) {
        if (version_ != Version::v2025_10) {
          hang_ = "the device refused " + std::to_string(bytes) + " bytes and backing off by 0.9 rounds back to " +
                  std::to_string(next) + " bytes, so the backpedal loop retries the same size forever";
          return false;
        }
        next = bytes - kMinAllocation;  // the progress guard
      }
      bytes = next;
      if (bytes < rounded) return false;
      segment = device_.malloc(bytes);
    }
  }
  if (!increased) region_target_ *= 2;  // unsigned: wraps exactly as TensorFlow's size_t does
  pool_bytes_ += bytes;
  peak_pool_bytes_ = std::max(peak_pool_bytes_, pool_bytes_);
  const auto region = static_cast<std::uint32_t>(regions_.size());
  const std::uint32_t chunk = chunks_.add(Chunk{segment->addr, bytes, 0, kNone, kNone, region, false});
  regions_.push_back(Region{*segment, chunk, segment->addr});
  never_touched_ += bytes;
  insert_into_bin(chunk);
  return true;
}

bool BfcPolicy::wholly_free(const Region& region) const {
  const Chunk& first = chunks_[region.first_chunk];
  return !first.in_use && first.size == region.segment.bytes;
}

bool BfcPolicy::deallocate_free_regions(Bytes rounded) {
  if (!gc_) return false;
  Bytes free_bytes = 0;
  for (const Region& region : regions_) {
    if (wholly_free(region)) free_bytes += region.segment.bytes;
  }
  if (free_bytes == 0 || rounded > limit_ - pool_bytes_ + free_bytes) return false;
  free_regions_wholly_free();  // even if the Extend that follows fails, as in TensorFlow
  return true;
}

void BfcPolicy::free_regions_wholly_free() {
  std::erase_if(regions_, [&](const Region& region) {
    if (!wholly_free(region)) return false;
    remove_from_bin(region.first_chunk);
    chunks_.remove(region.first_chunk);
    never_touched_ -= region.segment.addr + region.segment.bytes - region.touched_end;
    device_.free(region.segment);
    pool_bytes_ -= region.segment.bytes;
    return true;
  });
  for (std::uint32_t r = 0; r < regions_.size(); ++r) {  // rare: renumber the regions left
    for (std::uint32_t c = regions_[r].first_chunk; c != kNone; c = chunks_[c].next) chunks_[c].region = r;
  }
}

void BfcPolicy::release_cached() { free_regions_wholly_free(); }

void BfcPolicy::insert_into_bin(std::uint32_t chunk) {
  free_chunks_.insert(SizeBins::Entry{chunks_[chunk].size, chunks_[chunk].ptr, chunk});
}

void BfcPolicy::remove_from_bin(std::uint32_t chunk) { free_chunks_.erase(chunks_[chunk].size, chunks_[chunk].ptr); }

PolicyStats BfcPolicy::stats() const {
  const Bytes largest_free = free_chunks_.empty() ? 0 : free_chunks_.back().size;
  return PolicyStats{.allocated = bytes_in_use_,
                     .reserved = pool_bytes_,
                     .largest_free = largest_free,
                     .limit = limit_,
                     .limit_kind = limit_rule_.kind,
                     .withheld = limit_rule_.withheld,
                     .never_touched = never_touched_};
}

// A chunk is carved from the low end of a free one, so what blocks have covered in a
// region is one stretch from its start: everything after its end is untouched.
void BfcPolicy::touch(const Chunk& chunk) {
  Region& region = regions_[chunk.region];
  if (const Addr end = chunk.ptr + chunk.size; end > region.touched_end) {
    never_touched_ -= end - region.touched_end;
    region.touched_end = end;
  }
}

Bytes BfcPolicy::rounded_size(Bytes requested) const { return requested == 0 ? 0 : rounded_bytes(requested); }

PolicyInspection BfcPolicy::inspect(Detail detail) const {
  Bytes releasable = 0;
  for (const Region& region : regions_) {
    if (wholly_free(region)) releasable += region.segment.bytes;
  }
  return PolicyInspection{releasable, extra_stats(), detail == Detail::full ? describe_state() : std::string()};
}

std::vector<PolicyStat> BfcPolicy::extra_stats() const {
  // Before 2025-10 GetStats never filled largest_free_block_bytes: those versions report 0.
  const Bytes largest_free_block = version_ == Version::v2025_10 ? stats().largest_free : 0;
  return {
      {"num_allocs", num_allocs_},
      {"bytes_in_use", bytes_in_use_, Unit::bytes},
      {"peak_bytes_in_use", peak_bytes_in_use_, Unit::bytes},
      {"largest_alloc_size", largest_alloc_size_, Unit::bytes},
      {"bytes_limit", limit_, Unit::bytes},
      {"pool_bytes", pool_bytes_, Unit::bytes},
      {"peak_pool_bytes", peak_pool_bytes_, Unit::bytes},
      {"largest_free_block_bytes", largest_free_block, Unit::bytes},
      {"get_memory_info_current", bytes_in_use_, Unit::bytes},
      {"get_memory_info_peak", peak_bytes_in_use_, Unit::bytes},
  };
}

std::string BfcPolicy::describe_state() const {
  struct BinSummary {
    std::uint64_t chunks = 0, in_use = 0;
    Bytes bytes = 0, bytes_in_use = 0, requested = 0;
  };
  std::array<BinSummary, kBins> summary{};
  for (const Region& region : regions_) {
    for (std::uint32_t c = region.first_chunk; c != kNone; c = chunks_[c].next) {
      BinSummary& bin = summary[bfc_bin_for(chunks_[c].size)];
      ++bin.chunks;
      bin.bytes += chunks_[c].size;
      if (chunks_[c].in_use) {
        ++bin.in_use;
        bin.bytes_in_use += chunks_[c].size;
        bin.requested += chunks_[c].requested;
      }
    }
  }
  std::string out = "  BFC: limit " + format_bytes(limit_) + ", pool " + format_bytes(pool_bytes_) + " in " +
                    std::to_string(regions_.size()) + " regions, in use " + format_bytes(bytes_in_use_) +
                    ", largest free chunk " + format_bytes(stats().largest_free) + "\n";
  for (std::size_t b = 0; b < kBins; ++b) {
    const BinSummary& bin = summary[b];
    if (bin.chunks == 0) continue;
    out += "  Bin (" + format_bytes(kMinAllocation << b) + "): " + std::to_string(bin.chunks) + " chunks, " +
           std::to_string(bin.in_use) + " in use; " + format_bytes(bin.bytes) + " in chunks, " +
           format_bytes(bin.bytes_in_use) + " in use, " + format_bytes(bin.requested) + " requested\n";
  }
  return out;
}

void BfcPolicy::check() const {
  const auto fail = [](const std::string& what) { throw Error("bfc: " + what); };
  Bytes pool = 0;
  Bytes in_use = 0;
  std::size_t free_chunks = 0;
  for (const Region& region : regions_) {
    pool += region.segment.bytes;
    Addr expected = region.segment.addr;
    std::uint32_t prev = kNone;
    for (std::uint32_t c = region.first_chunk; c != kNone; prev = c, c = chunks_[c].next) {
      const Chunk& chunk = chunks_[c];
      if (chunk.ptr != expected || chunk.prev != prev) fail("chunks do not tile their region");
      if (chunk.region != static_cast<std::size_t>(&region - regions_.data())) fail("a chunk names another region");
      if (chunk.size == 0 || chunk.size % kMinAllocation != 0) fail("a chunk of " + std::to_string(chunk.size) + " bytes");
      if (!chunk.in_use && prev != kNone && !chunks_[prev].in_use) fail("two free neighbours left unmerged");
      if (chunk.in_use) in_use += chunk.size;
      free_chunks += !chunk.in_use;
      expected += chunk.size;
    }
    if (expected != region.segment.addr + region.segment.bytes) fail("chunks do not cover their region");
  }
  if (pool != pool_bytes_) fail("pool_bytes is off");
  if (in_use != bytes_in_use_) fail("bytes_in_use is off");
  free_chunks_.check();
  free_chunks_.for_each([&](const SizeBins::Entry& entry) {
    const Chunk& chunk = chunks_[entry.handle];
    if (chunk.in_use || chunk.size != entry.size || chunk.ptr != entry.addr) fail("a stale bin entry");
  });
  if (free_chunks_.size() != free_chunks) fail("free chunks missing from the bins");
}

}  // namespace allocsim
