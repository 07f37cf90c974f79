#include "policies/caching.hpp"

#include <algorithm>
#include <charconv>
#include <bit>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "policies/torch_alloc_conf.hpp"
#include "sim/error.hpp"

namespace allocsim {
namespace {

constexpr Bytes kSmallSize = 1_MiB;
constexpr Bytes kSmallBuffer = 2_MiB;
constexpr Bytes kMinLargeAlloc = 10_MiB;
constexpr Bytes kLargeBuffer = 20_MiB;
constexpr Bytes kRoundLarge = 2_MiB;
constexpr Bytes kUnlimited = std::numeric_limits<Bytes>::max();

}  // namespace

Bytes torch_round_size(Bytes size, std::uint64_t divisions) {
  if (size < kMinBlockSize) return kMinBlockSize;
  if (divisions > 1 && size > kMinBlockSize * divisions) {
    if (std::has_single_bit(size)) return size;
    const Bytes floor_power = std::bit_floor(size);
    const Bytes step = floor_power >> std::countr_zero(divisions);
    return step == 0 ? 2 * floor_power : align_up(size, step);
  }
  return align_up(size, kMinBlockSize);
}

Bytes torch_round_size(Bytes size, const RoundupDivisions& divisions) {
  const int log2_size = size == 0 ? 0 : static_cast<int>(std::bit_width(size)) - 1;
  const auto interval = static_cast<std::size_t>(std::clamp(log2_size - 20, 0, 15));
  return torch_round_size(size, divisions[interval]);
}

RoundupDivisions parse_roundup_divisions(std::string_view text) {
  const auto fail = [&](const std::string& why) -> RoundupDivisions {
    throw Error("policy caching: roundup_power2_divisions '" + std::string(text) + "': " + why);
  };
  const auto value_of = [&](std::string_view digits) {
    std::uint64_t value = 0;
    const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
    if (error != std::errc{} || end != digits.data() + digits.size() || digits.empty()) {
      fail(std::string(digits).append(" is not a number"));
    }
    if (value != 0 && !std::has_single_bit(value)) fail("every value must be 0 or a power of two");
    return value;
  };
  RoundupDivisions divisions{};
  if (!text.starts_with('[')) {
    divisions.fill(value_of(text));
    return divisions;
  }
  if (!text.ends_with(']')) return fail("a list ends with ']'");
  std::string_view rest = text.substr(1, text.size() - 2);
  int last = -1;  // the last interval set explicitly
  bool first = true;
  while (!rest.empty()) {
    const std::string_view item = rest.substr(0, rest.find(','));
    rest.remove_prefix(std::min(rest.size(), item.size() + 1));
    const auto colon = item.find(':');
    if (colon == std::string_view::npos) return fail(std::string(item).append(" is not KEY:VALUE"));
    const std::uint64_t value = value_of(item.substr(colon + 1));
    const std::string_view key = item.substr(0, colon);
    if (key == ">") {  // every interval after the last one set
      for (std::size_t i = static_cast<std::size_t>(last + 1); i < divisions.size(); ++i) divisions[i] = value;
      continue;
    }
    const std::uint64_t megabytes = value_of(key);
    if (megabytes == 0) return fail("keys are powers of two in MB");
    const int index = std::min(static_cast<int>(std::bit_width(megabytes)) - 1, 15);
    if (first) {  // the first key also covers every interval below it
      for (int i = 0; i < index; ++i) divisions[static_cast<std::size_t>(i)] = value;
      first = false;
    }
    divisions[static_cast<std::size_t>(index)] = value;
    last = index;
  }
  return divisions;
}

Bytes torch_allocation_size(Bytes rounded) {
  if (rounded <= kSmallSize) return kSmallBuffer;
  if (rounded < kMinLargeAlloc) return kLargeBuffer;
  return align_up(rounded, kRoundLarge);
}

CachingPolicy::CachingPolicy(const Settings& settings, Device& device) : device_(device) {
  max_split_size_ = settings.max_split_size;
  max_non_split_rounding_ = settings.max_non_split_rounding;
  divisions_ = settings.divisions;
  gc_threshold_ = settings.gc_threshold;
  cap_ = MemoryCap::fraction_of_total(settings.fraction, device, "policy caching");
  expandable_ = settings.expandable;
  plain_rounding_ = std::all_of(divisions_.begin(), divisions_.end(), [](std::uint64_t d) { return d <= 1; });
}

// Every request passes here: PyTorch's default (no divisions) skips finding the size's
// interval.
inline Bytes CachingPolicy::round_size(Bytes size) const {
  if (plain_rounding_) return std::max(align_up(size, kMinBlockSize), kMinBlockSize);  // 0 B too: 512
  return torch_round_size(size, divisions_);
}

Bytes CachingPolicy::rounded_size(Bytes requested) const { return requested == 0 ? 0 : round_size(requested); }

namespace {

// The conf's entries ('+' or ';' between them) as the spec's own keys and values, each
// read by PyTorch's rules in the one table of its keys (policies/torch_alloc_conf).
std::vector<std::pair<std::string, std::string>> conf_parameters(std::string_view conf) {
  std::vector<std::pair<std::string, std::string>> parameters;
  while (!conf.empty()) {
    const std::size_t end = conf.find_first_of("+;");
    const std::string_view entry = conf.substr(0, end);
    conf.remove_prefix(std::min(conf.size(), entry.size() + 1));
    if (entry.empty()) continue;
    const auto colon = entry.find(':');
    if (colon == std::string_view::npos) throw Error("policy caching: conf entry '" + std::string(entry) + "' is not key:value");
    const std::string key(entry.substr(0, colon));
    const std::string value(entry.substr(colon + 1));
    const AllocConfSetting setting = read_alloc_conf_entry(key, value, "policy caching: conf");
    using Kind = AllocConfSetting::Kind;
    if (setting.kind == Kind::parameter) {
      parameters.emplace_back(setting.name, setting.value);
    } else if (setting.kind == Kind::policy && setting.name != "torch-async") {
      parameters.emplace_back("expandable_segments", setting.name == "expandable" ? "true" : "false");
    } else if (setting.kind == Kind::policy) {
      throw Error("policy caching: conf " + key + ":" + value + " is not modelled by caching: it is the policy " + setting.name);
    }
  }
  return parameters;
}

}  // namespace

CachingSettings caching_settings(const Params& given) {
  const Params params = given.with(conf_parameters(given.text("conf")));  // the conf applies after the keys
  const auto megabytes_at_least_20 = [&](std::string_view key, Bytes fallback) {
    if (params.text(key) == "unlimited") return fallback;
    const Bytes bytes = params.bytes(key);
    if (bytes < kLargeBuffer) throw Error("policy caching: " + std::string(key) + " must be at least 20 MiB");
    return bytes;
  };
  CachingSettings settings{
      .max_split_size = megabytes_at_least_20("max_split_size", kUnlimited),
      .max_non_split_rounding = megabytes_at_least_20("max_non_split_rounding", kLargeBuffer),
      .divisions = parse_roundup_divisions(params.text("roundup_power2_divisions")),
      .gc_threshold = params.number("gc_threshold"),
      .fraction = params.number("fraction"),
      .expandable = params.boolean("expandable_segments"),
  };
  if (settings.gc_threshold < 0 || settings.gc_threshold >= 1) throw Error("policy caching: gc_threshold must be in [0, 1)");
  MemoryCap::check_fraction(settings.fraction, "policy caching");
  return settings;
}

CachingPolicy::~CachingPolicy() {
  for (const VirtualSegment& segment : virtual_segments_) {
    for (std::size_t p = 0; p < segment.pages.size(); ++p) {
      if (segment.pages[p] == 0) continue;
      device_.unmap(segment.base + p * segment.page, segment.page);  // each page is its own mapping
      device_.release_physical(Segment{segment.pages[p], segment.page});
    }
    device_.release_addresses(segment.reserved_at, segment.reserved_bytes);
  }
  for (std::uint32_t b = 0; b < blocks_.extent(); ++b) {
    if (blocks_[b].size != 0 && blocks_[b].prev == kNone && !expandable_) {  // a segment's first block
      Bytes bytes = 0;
      for (std::uint32_t c = b; c != kNone; c = blocks_[c].next) bytes += blocks_[c].size;
      device_.free(Segment{blocks_[b].ptr, bytes});
    }
  }
}

void CachingPolicy::prepare(const ReplaySetup& setup) {
  if (setup.allocations > block_of_.size()) block_of_.resize(setup.allocations, kNone);
}

SizeBins* CachingPolicy::Pool::find(Stream stream) {
  return const_cast<SizeBins*>(std::as_const(*this).find(stream));
}

const SizeBins* CachingPolicy::Pool::find(Stream stream) const {
  if (streams.size() == 1) return streams.front().first == stream ? &streams.front().second : nullptr;
  const auto it = std::lower_bound(streams.begin(), streams.end(), stream,
                                   [](const auto& entry, Stream s) { return entry.first < s; });
  return it != streams.end() && it->first == stream ? &it->second : nullptr;
}

namespace {

// A stream's first free block: its bins made, in stream order.
SizeBins& add_stream(std::vector<std::pair<Stream, SizeBins>>& streams, Stream stream) {
  const auto it = std::lower_bound(streams.begin(), streams.end(), stream,
                                   [](const auto& entry, Stream s) { return entry.first < s; });
  return streams.emplace(it, stream, SizeBins{})->second;
}

}  // namespace

SizeBins& CachingPolicy::Pool::bins(Stream stream) {
  if (SizeBins* found = find(stream)) return *found;
  return add_stream(streams, stream);
}

std::size_t CachingPolicy::Pool::count() const {
  std::size_t count = 0;
  for (const auto& [stream, bins] : streams) count += bins.size();
  return count;
}

void CachingPolicy::Pool::add_unmapped(const UnmappedKey& key) {
  unmapped.insert(std::lower_bound(unmapped.begin(), unmapped.end(), key), key);
}

void CachingPolicy::Pool::erase_unmapped(const UnmappedKey& key) {
  const auto it = std::lower_bound(unmapped.begin(), unmapped.end(), key);
  if (it == unmapped.end() || key < *it) throw Error("caching: no unmapped space at " + std::to_string(key.ptr));
  unmapped.erase(it);
}

bool CachingPolicy::Pool::has_unmapped(const UnmappedKey& key) const {
  const auto it = std::lower_bound(unmapped.begin(), unmapped.end(), key);
  return it != unmapped.end() && !(key < *it) && it->block == key.block;
}

void CachingPolicy::cache(std::uint32_t block) {
  CachedBlock& b = blocks_[block];
  Pool& pool = pool_of(b.small);
  b.gc_base = pool.lookups;
  pool.bins(b.stream).insert(SizeBins::Entry{b.size, b.ptr, block});
}

void CachingPolicy::uncache(std::uint32_t block) {
  const CachedBlock& b = blocks_[block];
  pool_of(b.small).find(b.stream)->erase(b.size, b.ptr);
}

inline std::uint32_t CachingPolicy::get_free_block(Pool& pool, Stream stream, Bytes size) {
  ++pool.lookups;
  SizeBins* const bins = pool.find(stream);
  if (bins == nullptr) return kNone;
  SizeBins::Cursor it = bins->lower_bound(size);
  if (it == SizeBins::end()) return kNone;
  if (expandable_) {
    // Best fit counts the unmapped space after a free expandable block as its own.
    const auto expandable_size = [&](std::uint32_t b) {
      const std::uint32_t next = blocks_[b].next;
      return blocks_[b].size + (next != kNone && !blocks_[next].mapped ? blocks_[next].size : 0);
    };
    for (auto next = bins->next(it);
         next != SizeBins::end() && expandable_size((*bins)[next].handle) < expandable_size((*bins)[it].handle);
         next = bins->next(next)) {
      it = next;
    }
  }
  // The max_split_size rules judge only the block found; there is no further search.
  const SizeBins::Entry found = (*bins)[it];
  if (size < max_split_size_ && found.size >= max_split_size_) return kNone;
  if (size >= max_split_size_ && found.size >= size + max_non_split_rounding_) return kNone;
  bins->erase(it);
  return found.handle;
}

std::uint32_t CachingPolicy::alloc_block(Bytes size, Bytes alloc_size, bool small, Stream stream, bool is_retry) {
  if (is_retry) ++num_alloc_retries_;
  if (!cap_.admits(reserved_, alloc_size)) return kNone;  // no driver call
  if (expandable_) return try_allocate_expandable_block(pool_of(small), stream, size, small);
  const auto segment = device_.malloc(alloc_size);
  if (!segment) return kNone;
  ++num_device_alloc_;
  reserved_ += alloc_size;
  ++segments_;
  note_peaks();
  return blocks_.add(CachedBlock{segment->addr, alloc_size, 0, kNone, kNone, stream, small, false, true, 0});
}

void CachingPolicy::release_block(std::uint32_t block) {
  uncache(block);
  device_.free(Segment{blocks_[block].ptr, blocks_[block].size});
  ++num_device_free_;
  reserved_ -= blocks_[block].size;
  --segments_;
  retire(block);
}

void CachingPolicy::retire(std::uint32_t block) {
  blocks_[block].size = 0;  // marks the slot unused
  blocks_.remove(block);
}

bool CachingPolicy::release_available_cached_blocks(Pool& pool, Stream stream, Bytes size) {
  // PyTorch releases no expandable block here; release_cached_blocks unmaps them.
  if (max_split_size_ == kUnlimited || expandable_) return false;
  const Bytes key_size = std::max(size, max_split_size_);
  const SizeBins* const bins = pool.find(stream);
  if (bins == nullptr) return false;
  // Only a whole segment goes back to the device. PyTorch's own oversize blocks always are
  // (it never splits one), but a start adopted from a recording made under another
  // max_split_size holds oversize free blocks inside partly used segments: those stay.
  const SizeBins::Cursor large_enough = bins->lower_bound(key_size);
  for (SizeBins::Cursor it = large_enough; it != SizeBins::end(); it = bins->next(it)) {
    if (!unsplit((*bins)[it].handle)) continue;
    release_block((*bins)[it].handle);  // one cached block large enough
    return true;
  }
  // Otherwise free oversize blocks of this stream from the largest down; those freed stay
  // freed even when they are not enough.
  std::vector<std::uint32_t> victims;
  Bytes released = 0;
  for (SizeBins::Cursor it = large_enough; released < key_size && it != bins->begin();) {
    it = bins->prev(it);
    if ((*bins)[it].size < max_split_size_) break;
    if (!unsplit((*bins)[it].handle)) continue;
    victims.push_back((*bins)[it].handle);
    released += (*bins)[it].size;
  }
  for (const std::uint32_t block : victims) release_block(block);
  return released >= key_size;
}

void CachingPolicy::release_cached_blocks() {
  for (Pool* pool : {&large_, &small_}) {
    std::vector<std::uint32_t> whole;
    std::vector<std::uint32_t> to_unmap;
    pool->for_each([&](const SizeBins::Entry& free) {
      if (expandable_) {
        to_unmap.push_back(free.handle);
      } else if (unsplit(free.handle)) {
        whole.push_back(free.handle);
      }
    });
    for (const std::uint32_t block : whole) release_block(block);
    for (const std::uint32_t block : to_unmap) unmap_block(block);
  }
}

void CachingPolicy::garbage_collect_cached_blocks() {
  if (expandable_) return;  // it frees unsplit segments; expandable space is unmapped instead
  const auto threshold = static_cast<Bytes>(gc_threshold_ * static_cast<double>(cap_.bytes()));
  if (reserved_ <= threshold) return;
  const Bytes target = reserved_ - threshold;
  std::uint64_t total_age = 0;
  std::uint64_t count = 0;
  large_.for_each([&](const SizeBins::Entry& free) {
    if (!unsplit(free.handle)) return;
    total_age += large_.lookups - blocks_[free.handle].gc_base;
    ++count;
  });
  if (count == 0) return;
  Bytes reclaimed = 0;
  bool freed = true;
  while (reclaimed < target && freed && count > 0) {
    freed = false;
    // age >= total_age / count, as PyTorch compares in double; exactly, in integers.
    std::vector<std::uint32_t> old;
    large_.for_each([&](const SizeBins::Entry& free) {
      const unsigned __int128 age = large_.lookups - blocks_[free.handle].gc_base;
      if (unsplit(free.handle) && age * count >= total_age) old.push_back(free.handle);
    });
    for (const std::uint32_t block : old) {  // the whole pass, even past the target
      total_age -= large_.lookups - blocks_[block].gc_base;
      --count;
      reclaimed += blocks_[block].size;
      release_block(block);
      freed = true;
    }
  }
}

Allocation CachingPolicy::allocate(const Request& request) {
  const Bytes size = round_size(request.bytes);
  const bool small = size <= kSmallSize;
  Pool& pool = pool_of(small);
  const Bytes alloc_size = torch_allocation_size(size);
  std::uint32_t block = get_free_block(pool, request.stream, size);
  if (block == kNone) {
    if (cap_.capped() && gc_threshold_ > 0) garbage_collect_cached_blocks();
    block = alloc_block(size, alloc_size, small, request.stream, false);
    if (block == kNone && release_available_cached_blocks(pool, request.stream, size)) {
      block = alloc_block(size, alloc_size, small, request.stream, false);
    }
    if (block == kNone) {
      release_cached_blocks();
      block = alloc_block(size, alloc_size, small, request.stream, true);
    }
    if (block == kNone) {
      ++num_ooms_;
      return std::nullopt;
    }
  }
  const Bytes rest = blocks_[block].size - size;
  const bool split = small || expandable_ ? rest >= kMinBlockSize : size < max_split_size_ && rest > kSmallSize;
  if (split) cache(split_after(blocks_, block, size, blocks_[block]));
  CachedBlock& used = blocks_[block];
  used.allocated = true;
  used.requested = request.bytes;
  const std::size_t id = index_of(request.id);
  if (id >= block_of_.size()) block_of_.resize(std::max(id + 1, block_of_.size() * 2), kNone);
  block_of_[id] = block;
  allocated_ += used.size;
  requested_ += request.bytes;
  // Reserved bytes and segments grow only where a segment is taken or mapped, which notes
  // their peaks there: a served request moves these two alone.
  peak_allocated_ = std::max(peak_allocated_, allocated_);
  peak_requested_ = std::max(peak_requested_, requested_);
  return Block{used.ptr, used.size, request.bytes, request.id, request.stream};
}

void CachingPolicy::merge(std::uint32_t left, std::uint32_t right) {
  merge_next(blocks_, left, right);
  retire(right);
}

void CachingPolicy::deallocate(const Block& block, Nanos) {
  const std::size_t id = index_of(block.id);
  std::uint32_t b = id < block_of_.size() ? block_of_[id] : kNone;
  if (b == kNone || !blocks_[b].allocated || blocks_[b].ptr != block.addr) {
    throw Error("caching: free of a block it did not hand out (id " + std::to_string(id) + ")");
  }
  block_of_[id] = kNone;
  blocks_[b].allocated = false;
  allocated_ -= blocks_[b].size;
  requested_ -= blocks_[b].requested;
  cache(absorb_free_neighbours(b));
}

// Previous first, then next, as try_merge_blocks is called; mapped and unmapped space
// never merge. Returns the merged block's handle.
std::uint32_t CachingPolicy::absorb_free_neighbours(std::uint32_t block) {
  const auto mergeable = [&](std::uint32_t other) {
    return other != kNone && !blocks_[other].allocated && blocks_[other].mapped == blocks_[block].mapped;
  };
  if (const std::uint32_t prev = blocks_[block].prev; mergeable(prev)) {
    forget(prev);
    merge(prev, block);
    block = prev;
  }
  if (const std::uint32_t next = blocks_[block].next; mergeable(next)) {
    forget(next);
    merge(block, next);
  }
  return block;
}

void CachingPolicy::forget(std::uint32_t block) {
  if (blocks_[block].mapped) {
    uncache(block);
  } else {
    pool_of(blocks_[block].small).erase_unmapped(unmapped_key_of(block));
  }
}

CachingPolicy::UnmappedKey CachingPolicy::unmapped_key_of(std::uint32_t block) const {
  return UnmappedKey{blocks_[block].ptr, block, blocks_[block].stream};
}

void CachingPolicy::note_peaks() {
  peak_allocated_ = std::max(peak_allocated_, allocated_);
  peak_reserved_ = std::max(peak_reserved_, reserved_);
  peak_requested_ = std::max(peak_requested_, requested_);
  peak_segments_ = std::max(peak_segments_, segments_);
}

PolicyStats CachingPolicy::stats() const {
  return PolicyStats{.allocated = allocated_,
                     .reserved = reserved_,
                     .largest_free = largest_cached(),
                     .limit = cap_.bytes(),
                     .limit_kind = cap_.capped() ? LimitKind::fraction : LimitKind::device};
}

// Each stream's largest free block is the last of its bins.
Bytes CachingPolicy::largest_cached() const {
  Bytes largest = 0;
  for (const Pool* pool : {&small_, &large_}) {
    for (const auto& [stream, bins] : pool->streams) {
      if (!bins.empty()) largest = std::max(largest, bins.back().size);
    }
  }
  return largest;
}

PolicyInspection CachingPolicy::inspect(Detail) const {
  Bytes releasable = 0;
  for (const Pool* pool : {&small_, &large_}) {
    pool->for_each([&](const SizeBins::Entry& free) {
      if (expandable_) {
        releasable += whole_free_pages(free.handle);
      } else if (unsplit(free.handle)) {
        releasable += free.size;
      }
    });
  }
  return PolicyInspection{releasable, extra_stats(), {}};
}

std::vector<PolicyStat> CachingPolicy::extra_stats() const {
  Bytes inactive_split = 0;  // free blocks inside segments that are partly in use
  for (const Pool* pool : {&small_, &large_}) {
    pool->for_each([&](const SizeBins::Entry& free) {  // expandable segments are left out, as PyTorch does
      if (!unsplit(free.handle) && !expandable_) inactive_split += free.size;
    });
  }
  // torch.cuda.memory_stats() keys. Without cross-stream frees, active equals allocated.
  return {
      {"allocated_bytes.all.peak", peak_allocated_, Unit::bytes},  // max_memory_allocated()
      {"reserved_bytes.all.peak", peak_reserved_, Unit::bytes},    // max_memory_reserved()
      {"active_bytes.all.peak", peak_allocated_, Unit::bytes},
      {"requested_bytes.all.peak", peak_requested_, Unit::bytes},
      {"allocated_bytes.all.current", allocated_, Unit::bytes},
      {"reserved_bytes.all.current", reserved_, Unit::bytes},
      {"inactive_split_bytes.all.current", inactive_split, Unit::bytes},
      {"segment.all.peak", peak_segments_},
      {"segment.all.current", segments_},
      {"num_alloc_retries", num_alloc_retries_},
      {"num_ooms", num_ooms_},
      {"num_device_alloc", num_device_alloc_},
      {"num_device_free", num_device_free_},
  };
}

void CachingPolicy::check() const {
  const auto fail = [](const std::string& what) { throw Error("caching: " + what); };
  Bytes reserved = 0;
  Bytes allocated = 0;
  std::size_t cached = 0;
  std::size_t unmapped = 0;
  for (std::uint32_t b = 0; b < blocks_.extent(); ++b) {
    const CachedBlock& block = blocks_[b];
    if (block.size == 0) continue;  // an unused slot
    if (block.prev == kNone) {
      Addr expected = block.ptr;
      for (std::uint32_t c = b; c != kNone; c = blocks_[c].next) {
        if (blocks_[c].ptr != expected) fail("blocks do not tile their segment");
        if (blocks_[c].next != kNone && blocks_[blocks_[c].next].prev != c) fail("broken neighbour links");
        const std::uint32_t next = blocks_[c].next;
        if (!blocks_[c].allocated && next != kNone && !blocks_[next].allocated &&
            blocks_[c].mapped == blocks_[next].mapped) {
          fail("two free neighbours left unmerged");
        }
        expected += blocks_[c].size;
        if (blocks_[c].mapped) reserved += blocks_[c].size;
      }
    }
    if (block.allocated) {
      allocated += block.size;
    } else if (!block.mapped) {
      ++unmapped;
      if (!pool_of_const(block.small).has_unmapped(unmapped_key_of(b))) fail("unmapped space missing from its pool");
    } else {
      ++cached;
      const SizeBins* bins = pool_of_const(block.small).find(block.stream);
      if (bins == nullptr || !bins->contains(block.size, block.ptr)) fail("a free block missing from its pool");
    }
  }
  if (reserved != reserved_) fail("reserved bytes are off");
  if (allocated != allocated_) fail("allocated bytes are off");
  if (cached != small_.count() + large_.count()) fail("stale pool entries");
  for (const Pool* pool : {&small_, &large_}) {
    for (const auto& [stream, bins] : pool->streams) bins.check();
    if (!std::is_sorted(pool->unmapped.begin(), pool->unmapped.end())) fail("unmapped space out of order");
  }
  if (unmapped != small_.unmapped.size() + large_.unmapped.size()) fail("stale unmapped entries");
  check_pages();
}

}  // namespace allocsim
