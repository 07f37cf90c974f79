#include "policies/async_pool.hpp"

#include <algorithm>
#include <limits>
#include <string>

#include "policies/bfc.hpp"
#include "sim/error.hpp"

namespace allocsim {
namespace {

constexpr Bytes kNoTrim = std::numeric_limits<Bytes>::max();

// GpuCudaMallocAsyncAllocator's pool size: the memory limit TensorFlow gives the device.
Bytes tensorflow_pool_size(const Device& device) {
  const Bytes available = device.available();
  const Bytes reserve = tf_min_system_memory(available, device.compute_capability() / 10);
  return reserve < available ? available - reserve : available;
}

Bytes threshold_of(const AsyncPoolPolicy::Settings& settings, const Device& device) {
  switch (settings.threshold) {
    case AsyncPoolPolicy::Settings::Threshold::max: return kNoTrim;
    case AsyncPoolPolicy::Settings::Threshold::tf: return tensorflow_pool_size(device);
    case AsyncPoolPolicy::Settings::Threshold::bytes: break;
  }
  return settings.threshold_bytes;
}

OomSync oom_sync_of(const Params& params) {
  const std::string_view text = params.text("oom_sync");
  if (text == "none") return OomSync::none;
  if (text == "stream") return OomSync::stream;
  if (text == "device") return OomSync::device;
  throw Error("policy async: oom_sync '" + std::string(text) + "' is not none, stream or device");
}

}  // namespace

AsyncPoolPolicy::Settings AsyncPoolPolicy::settings(const Params& params) {
  using Threshold = Settings::Threshold;
  const std::string_view threshold = params.text("release_threshold");
  const bool deterministic = params.boolean("deterministic");
  Settings settings{
      .granularity = params.bytes("granularity"),
      .threshold = threshold == "max" ? Threshold::max : threshold == "tf" ? Threshold::tf : Threshold::bytes,
      .threshold_bytes = 0,
      .follow_events = params.boolean("follow_event_dependencies"),
      .opportunistic = params.boolean("opportunistic") && !deterministic,
      .completion = params.count("completion_ns"),
      .internal = params.boolean("internal_dependencies") && !deterministic,
      .trim_to = params.bytes("trim_to"),
      .fraction = params.number("fraction"),
      .prealloc = std::nullopt,
      .oom_sync = oom_sync_of(params),
      .one_stream = params.boolean("one_stream"),
  };
  if (settings.granularity < kBlockAlignment || settings.granularity % kBlockAlignment != 0) {
    throw Error("policy async: granularity must be a multiple of 256 B, not " + format_bytes_exact(settings.granularity));
  }
  if (settings.threshold == Threshold::bytes) settings.threshold_bytes = params.bytes("release_threshold");
  if (params.text("prealloc") != "threshold") {
    settings.prealloc = params.bytes("prealloc");
  } else if (settings.threshold == Threshold::max) {
    throw Error("policy async: prealloc=threshold needs a finite release_threshold");
  }
  MemoryCap::check_fraction(settings.fraction, "policy async");
  return settings;
}

AsyncPoolPolicy::AsyncPoolPolicy(const Settings& settings, Device& device)
    : device_(device),
      granularity_(settings.granularity),
      threshold_(threshold_of(settings, device)),
      follow_events_(settings.follow_events),
      opportunistic_(settings.opportunistic),
      completion_(settings.completion),
      internal_(settings.internal),
      trim_to_(settings.trim_to),
      cap_(MemoryCap::fraction_of_total(settings.fraction, device, "policy async")),
      prealloc_(settings.prealloc.value_or(threshold_)),
      oom_sync_(settings.oom_sync),
      one_stream_(settings.one_stream) {}

AsyncPoolPolicy::~AsyncPoolPolicy() {
  for (const Chunk& chunk : chunks_) device_.free(chunk.segment);
}

Allocation AsyncPoolPolicy::allocate(const Request& request) {
  if (!preallocated_) {
    // TensorFlow's SetStreamAndPreallocateMemory: one allocation and its free, so that the
    // pool holds the memory (kept by the threshold) before the first tensor.
    preallocated_ = true;
    if (prealloc_ > 0) {
      if (const auto block = serve(align_up(prealloc_, kBlockAlignment), Request{request.id, prealloc_, 0, request.now})) {
        deallocate(*block, request.now);
      }
    }
  }
  const Bytes size = align_up(request.bytes, kBlockAlignment);
  if (size == 0) return Block{0, 0, 0, request.id, request.stream};
  // PyTorch refuses over its fraction before calling CUDA, counting raw request bytes.
  if (cap_.capped() && !cap_.admits(requested_, request.bytes)) return std::nullopt;
  if (auto block = serve(size, request)) return *block;
  if (oom_sync_ == OomSync::none) return std::nullopt;
  synchronize(Sync{oom_sync_ == OomSync::device ? SyncKind::device : SyncKind::stream, stream_of(request.stream), 0},
              request.now);
  if (auto block = serve(size, request)) return *block;
  return std::nullopt;
}

std::optional<Block> AsyncPoolPolicy::serve(Bytes size, const Request& request) {
  const Stream stream = stream_of(request.stream);
  auto chosen = choose(size, stream, request.now);
  if (!chosen) {
    if (!grow(size, stream)) return std::nullopt;
    chosen = choose(size, stream, request.now);
  }
  const auto [addr, range] = ranges_[*chosen];
  if (range.freed != 0 && range.stream != stream) {
    ++cross_stream_reuses_;
    // Reuse by an inserted wait (or by a dependency the stream already has) leaves the
    // allocating stream ordered after everything the freeing stream did so far.
    if (reuse_rank(range, stream, request.now) == 4) waited(stream, range.stream) = frees_;
  }
  take_front(*chosen, size);
  chunks_[chunk_of(addr)].live += size;
  allocated_ += size;
  requested_ += request.bytes;
  peak_used_ = std::max(peak_used_, allocated_);
  return Block{addr, size, request.bytes, request.id, request.stream};
}

int AsyncPoolPolicy::reuse_rank(const FreeRange& range, Stream stream, Nanos now) const {
  if (range.freed == 0 || range.stream == stream) return 0;
  if (follow_events_) {
    const auto it = waited_.find({stream, range.stream});
    if (it != waited_.end() && it->second >= range.freed) return 1;
  }
  if (completed(range)) return 2;
  if (opportunistic_ && now >= range.freed_at + completion_) return 3;
  if (internal_) return 4;
  return -1;
}

bool AsyncPoolPolicy::completed(const FreeRange& range) const {
  if (range.freed <= all_completed_) return true;
  const auto it = completed_.find(range.stream);
  return it != completed_.end() && it->second >= range.freed;
}

// The best rule first, then the smallest fitting range, then the lowest address. The
// stream's own frees and never-used ranges (rank 0) are looked up; other streams' frees
// are scanned, since which of them a stream may use changes with every sync.
std::optional<std::uint32_t> AsyncPoolPolicy::choose(Bytes size, Stream stream, Nanos now) {
  std::optional<SizeBins::Entry> best;
  int best_rank = 0;
  const auto consider = [&](const SizeBins::Entry& entry, int rank) {
    if (!best || rank < best_rank ||
        (rank == best_rank && std::pair(entry.size, entry.addr) < std::pair(best->size, best->addr))) {
      best = entry;
      best_rank = rank;
    }
  };
  const auto own = freed_by_stream_.find(stream);
  for (const BySize* index : {&never_used_, own == freed_by_stream_.end() ? nullptr : &own->second}) {
    if (index == nullptr) continue;
    const SizeBins::Cursor fit = index->lower_bound(size);
    if (fit != SizeBins::end()) consider((*index)[fit], 0);
  }
  if (!best) {
    for (const auto& [other, index] : freed_by_stream_) {
      if (other == stream) continue;
      for (auto fit = index.lower_bound(size); fit != SizeBins::end(); fit = index.next(fit)) {
        const int rank = reuse_rank(ranges_[index[fit].handle].second, stream, now);
        if (rank >= 0) consider(index[fit], rank);
      }
    }
  }
  if (!best) return std::nullopt;
  return best->handle;
}

bool AsyncPoolPolicy::grow(Bytes size, Stream stream) {
  const Bytes bytes = align_up(size, granularity_);
  const auto segment = device_.malloc(bytes);
  if (!segment) return false;
  const Chunk chunk{*segment, 0};
  chunks_.insert(std::upper_bound(chunks_.begin(), chunks_.end(), chunk,
                                  [](const Chunk& a, const Chunk& b) { return a.segment.addr < b.segment.addr; }),
                 chunk);
  reserved_ += bytes;
  peak_reserved_ = std::max(peak_reserved_, reserved_);
  add_free(segment->addr, FreeRange{bytes, stream, 0, 0});
  return true;
}

void AsyncPoolPolicy::deallocate(const Block& block, Nanos now) {
  if (block.size == 0) return;
  chunks_[chunk_of(block.addr)].live -= block.size;
  allocated_ -= block.size;
  requested_ -= block.requested;
  add_free(block.addr, FreeRange{block.size, stream_of(block.stream), ++frees_, now});
}

// Merges with neighbours of the same chunk on the same stream; the merged range counts as
// freed at the later of the two (a stream that may use it may use both parts).
void AsyncPoolPolicy::add_free(Addr addr, FreeRange range) {
  // Ranges never cross a chunk, so a neighbour that touches this range lies in its chunk
  // unless the range starts or ends at the chunk's edge.
  const Segment& chunk = chunks_[chunk_of(addr)].segment;
  const auto mergeable = [&](std::uint32_t handle) {
    const auto& [other_addr, other] = ranges_[handle];
    return other.stream == range.stream && other_addr >= chunk.addr && other_addr < chunk.addr + chunk.bytes;
  };
  // Each neighbour's record is looked up once, by joins, for absorbed to use.
  std::uint32_t after = kNoNeighbour;
  std::uint32_t before = kNoNeighbour;
  const auto joins = [&](Range neighbour) {
    const std::uint32_t handle = handle_of(neighbour);
    (neighbour.addr > addr ? after : before) = handle;
    return mergeable(handle);
  };
  const auto absorbed = [&](Range neighbour) {
    const std::uint32_t handle = neighbour.addr > addr ? after : before;
    const FreeRange& other = ranges_[handle].second;
    range.freed = std::max(range.freed, other.freed);
    range.freed_at = std::max(range.freed_at, other.freed_at);
    forget(handle);
  };
  const Range merged = free_.add_merging(Range{addr, range.size}, joins, absorbed);
  range.size = merged.size;
  remember(merged.addr, range);
}

void AsyncPoolPolicy::remember(Addr addr, const FreeRange& range) {
  const std::uint32_t handle = ranges_.add({addr, range});
  free_sizes_.insert({range.size, addr, handle});
  size_index(range).insert({range.size, addr, handle});
}

void AsyncPoolPolicy::forget(std::uint32_t handle) {
  const auto& [addr, range] = ranges_[handle];
  free_sizes_.erase(range.size, addr);
  size_index(range).erase(range.size, addr);
  ranges_.remove(handle);
}

void AsyncPoolPolicy::erase_free(std::uint32_t handle) {
  free_.erase(free_.lower_bound(ranges_[handle].first));
  forget(handle);
}

// The rest of a range a request took the front of keeps its place: it touches no other
// free range of its stream (the range did not), so it merges with nothing.
void AsyncPoolPolicy::take_front(std::uint32_t handle, Bytes size) {
  const auto [addr, range] = ranges_[handle];
  if (range.size == size) {
    erase_free(handle);
    return;
  }
  forget(handle);
  free_.set(free_.lower_bound(addr), Range{addr + size, range.size - size});
  remember(addr + size, FreeRange{range.size - size, range.stream, range.freed, range.freed_at});
}

std::size_t AsyncPoolPolicy::chunk_of(Addr addr) const {
  const auto after = std::upper_bound(chunks_.begin(), chunks_.end(), addr,
                                      [](Addr a, const Chunk& chunk) { return a < chunk.segment.addr; });
  return static_cast<std::size_t>(after - chunks_.begin()) - 1;
}

void AsyncPoolPolicy::synchronize(const Sync& sync, Nanos) {
  switch (sync.kind) {
    case SyncKind::device:
      all_completed_ = frees_;
      break;
    case SyncKind::stream:
    case SyncKind::event:
      completed_[stream_of(sync.stream)] = frees_;
      break;
    case SyncKind::wait:
      waited(stream_of(sync.stream), stream_of(sync.waits_for)) = frees_;
      return;  // no host synchronisation: nothing is trimmed
  }
  if (reserved_ > threshold_) trim(threshold_);
}

// Releases wholly free chunks whose frees completed, highest address first, until the pool
// holds no more than `keep`.
void AsyncPoolPolicy::trim(Bytes keep) {
  for (std::size_t i = chunks_.size(); i-- > 0 && reserved_ > keep;) {
    const Chunk chunk = chunks_[i];
    if (chunk.live != 0) continue;
    const Addr start = chunk.segment.addr;
    const Addr end = start + chunk.segment.bytes;
    const auto first_in_chunk = [&] {
      const AddressRanges::Pos at = free_.lower_bound(start);
      return at != free_.end() && free_[at].addr < end ? std::optional<Range>(free_[at]) : std::nullopt;
    };
    bool done = true;
    for (auto at = free_.lower_bound(start); at != free_.end() && free_[at].addr < end; at = free_.next(at)) {
      done = done && completed(ranges_[handle_of(free_[at])].second);
    }
    if (!done) continue;
    while (const std::optional<Range> range = first_in_chunk()) erase_free(handle_of(*range));
    chunks_.erase(chunks_.begin() + static_cast<std::ptrdiff_t>(i));
    device_.free(chunk.segment);
    reserved_ -= chunk.segment.bytes;
    ++trims_;
  }
}

void AsyncPoolPolicy::release_cached() {
  // PyTorch's emptyCache: synchronise every stream, then cudaMemPoolTrimTo(pool, trim_to).
  all_completed_ = frees_;
  trim(trim_to_);
}

PolicyStats AsyncPoolPolicy::stats() const {
  return PolicyStats{.allocated = allocated_,
                     .reserved = reserved_,
                     .largest_free = free_sizes_.empty() ? 0 : free_sizes_.back().size,
                     .limit = cap_.bytes()};
}

PolicyInspection AsyncPoolPolicy::inspect(Detail detail) const {
  PolicyInspection inspection;
  for (const Chunk& chunk : chunks_) inspection.releasable += chunk.live == 0 ? chunk.segment.bytes : 0;
  inspection.extra = {
      {"reserved_mem_high", peak_reserved_, Unit::bytes},
      {"used_mem_high", peak_used_, Unit::bytes},
      {"pool_trims", trims_, Unit::count},
      {"cross_stream_reuses", cross_stream_reuses_, Unit::count},
  };
  if (detail == Detail::full) {
    inspection.state = "cudaMallocAsync pool: " + std::to_string(chunks_.size()) + " chunks, reserved " +
                       format_bytes(reserved_) + ", used " + format_bytes(allocated_) + ", " +
                       std::to_string(free_.size()) + " free ranges, largest " + format_bytes(stats().largest_free) +
                       ", release threshold " + (threshold_ == kNoTrim ? "max" : format_bytes(threshold_));
  }
  return inspection;
}

void AsyncPoolPolicy::check() const {
  std::vector<Bytes> free_in(chunks_.size(), 0);
  Addr previous_end = 0;
  free_.check();
  std::size_t ranges = 0;
  free_.for_each([&](Range range) {
    const Addr addr = range.addr;
    const SizeBins::Cursor entry = free_sizes_.find(range.size, addr);
    if (entry == SizeBins::end() || ranges_[free_sizes_[entry].handle].first != addr ||
        ranges_[free_sizes_[entry].handle].second.size != range.size) {
      throw Error("policy async: a free range's record is off");
    }
    ++ranges;
    if (addr % kBlockAlignment != 0 || range.size % kBlockAlignment != 0 || range.size == 0) {
      throw Error("policy async: unaligned or empty free range");
    }
    if (addr < previous_end) throw Error("policy async: free ranges overlap");
    previous_end = addr + range.size;
    const std::size_t chunk = chunk_of(addr);
    const Segment& segment = chunks_[chunk].segment;
    if (addr + range.size > segment.addr + segment.bytes) throw Error("policy async: a free range crosses its chunk");
    free_in[chunk] += range.size;
  });
  Bytes reserved = 0;
  Bytes live = 0;
  for (std::size_t i = 0; i < chunks_.size(); ++i) {
    if (free_in[i] + chunks_[i].live != chunks_[i].segment.bytes) {
      throw Error("policy async: free + live != chunk bytes in chunk " + std::to_string(i));
    }
    reserved += chunks_[i].segment.bytes;
    live += chunks_[i].live;
  }
  if (reserved != reserved_ || live != allocated_) throw Error("policy async: counters disagree with the chunks");
  std::size_t indexed = never_used_.size();
  for (const auto& [stream, index] : freed_by_stream_) indexed += index.size();
  if (free_sizes_.size() != ranges || indexed != ranges) {
    throw Error("policy async: size index disagrees with the free ranges");
  }
}

}  // namespace allocsim
