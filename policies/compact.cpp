#include "policies/compact.hpp"

#include <algorithm>
#include <limits>
#include <string>
#include <utility>

#include "sim/error.hpp"

namespace allocsim {

CompactPolicy::Settings CompactPolicy::settings(const Params& params) {
  const std::string_view trigger = params.text("trigger");
  const std::string_view strategy = params.text("strategy");
  const std::string_view grow = params.text("grow");
  if (trigger != "failure" && trigger != "threshold") {
    throw Error(std::string("policy compact: trigger=").append(trigger).append(" is not failure or threshold"));
  }
  if (strategy != "slide" && strategy != "gap") {
    throw Error(std::string("policy compact: strategy=").append(strategy).append(" is not slide or gap"));
  }
  const Settings settings{
      .on_threshold = trigger == "threshold",
      .threshold = params.number("threshold"),
      .gap = strategy == "gap",
      .merge = grow == "merge",
      .segment = align_up(params.bytes("segment"), kBlockAlignment),
      .region = params.bytes("region"),
      .prealloc = params.boolean("prealloc"),
  };
  if (settings.threshold < 0 || settings.threshold > 1) throw Error("policy compact: threshold must lie in [0, 1]");
  if (settings.region % kBlockAlignment != 0) {
    throw Error("policy compact: region=" + format_bytes(settings.region) + " is not a multiple of 256 B");
  }
  if (grow != "merge" && grow != "add") throw Error(std::string("policy compact: grow=").append(grow).append(" is not merge or add"));
  return settings;
}

CompactPolicy::CompactPolicy(const Settings& settings, Device& device)
    : device_(device),
      on_threshold_(settings.on_threshold),
      threshold_(settings.threshold),
      gap_(settings.gap),
      merge_(settings.merge),
      segment_bytes_(settings.segment),
      region_bytes_(settings.region),
      prealloc_(settings.prealloc),
      pool_(device) {}

CompactPolicy::~CompactPolicy() = default;

void CompactPolicy::prepare(const ReplaySetup& setup) {
  size_for_ids(setup.allocations);
  listener_ = setup.moves;
}

void CompactPolicy::size_for_ids(std::size_t count) {
  where_.resize(count);
  size_.resize(count);
  live_slot_.resize(count);
}

Allocation CompactPolicy::allocate(const Request& request) {
  if (one_region() && pool_.segments().empty() && !grow(0)) return std::nullopt;
  const Bytes size = align_up(std::max<Bytes>(request.bytes, 1), kBlockAlignment);
  auto range = pool_.free().best_fit(size);
  if (!range && pool_.free().total() >= size && compact_for(size)) range = pool_.free().best_fit(size);
  if (!range && !one_region() && ((merge_ && grow_merging(size)) || grow(size) || consolidate(size))) {
    range = pool_.free().best_fit(size);
  }
  if (!range) return std::nullopt;
  pool_.take(*range, size);
  const std::uint32_t id = index_of(request.id);
  if (id >= where_.size()) size_for_ids(std::max<std::size_t>(id + 1, 2 * where_.size()));
  where_[id] = range->addr;
  size_[id] = size;
  live_slot_[id] = static_cast<std::uint32_t>(live_.size());
  live_.push_back(id);
  allocated_ += size;
  return Block{range->addr, size, request.bytes, request.id, request.stream};
}

void CompactPolicy::deallocate(const Block& block, Nanos) {
  const std::uint32_t id = index_of(block.id);
  const Addr addr = where_[id];
  const Bytes size = size_[id];
  pool_.give(addr, size);
  const std::uint32_t last = live_.back();
  live_[live_slot_[id]] = last;
  live_slot_[last] = live_slot_[id];
  live_.pop_back();
  allocated_ -= size;
  // Only while there are holes below the segments' tops (or a slide would change
  // nothing), and once an eighth of the pool has been freed since the last one, so that
  // a nearly full pool is not compacted at every free.
  freed_since_compaction_ += size;
  if (on_threshold_ && pool_.free().count() > pool_.segments().size() && freed_since_compaction_ >= pool_.reserved() / 8 &&
      external_fragmentation() > threshold_) {
    slide(0);
  }
}

bool CompactPolicy::grow(Bytes size) {
  const Bytes unit = std::max(kBlockAlignment, device_.granularity());
  Bytes wanted = align_up(std::max(size + kGuard, segment_bytes_), unit);
  if (region_bytes_ != 0) wanted = region_bytes_;
  if (prealloc_) wanted = align_down(device_.available(), unit);
  if (wanted == 0) return false;
  const Bytes guard = one_region() ? 0 : kGuard;
  if (pool_.add(wanted, kBlockAlignment, guard)) return true;
  // What is left may still hold this one.
  return !one_region() && wanted > align_up(size + kGuard, unit) && pool_.add(align_up(size + kGuard, unit), kBlockAlignment, guard);
}

// Packs every block down, then swaps the highest segment for one that holds its blocks
// and `size` more, when those blocks are no more than `size` bytes. The old one is freed only after the copy, so for a moment both are
// held (peak_device_bytes shows it).
bool CompactPolicy::grow_merging(Bytes size) {
  if (pool_.segments().empty()) return false;
  const SlidePlan plan = plan_slide();
  // Copying more than the request itself would make growth cost more than it gains (a
  // single segment would be copied whole every time): add a segment instead.
  if (plan.in_last > size) return false;
  const Bytes unit = std::max(kBlockAlignment, device_.granularity());
  const Segment last = pool_.segments().back().segment;
  const auto added = pool_.add(align_up(std::max(plan.in_last + size + kGuard, segment_bytes_), unit), kBlockAlignment, kGuard);
  if (!added) return false;
  apply(plan);
  Addr cursor = added->addr;
  for (std::uint32_t id : live_by_address()) {
    if (where_[id] < last.addr || where_[id] >= last.addr + last.bytes) continue;
    move(id, cursor);
    cursor += size_[id];
  }
  pool_.release(pool_.segment_of(last.addr));
  rebuild_free_list();
  return true;
}

std::vector<std::uint32_t> CompactPolicy::live_by_address() const {
  std::vector<std::uint32_t> ids = live_;
  std::sort(ids.begin(), ids.end(), [&](std::uint32_t a, std::uint32_t b) { return where_[a] < where_[b]; });
  return ids;
}

double CompactPolicy::external_fragmentation() const {
  if (pool_.free().total() == 0) return 0;
  return 1 - static_cast<double>(pool_.free().largest()) / static_cast<double>(pool_.free().total());
}

bool CompactPolicy::compact_for(Bytes size) { return (gap_ && open_gap(size)) || slide(size); }

void CompactPolicy::move(std::uint32_t id, Addr to) {
  const Addr from = where_[id];
  const Bytes size = size_[id];
  const Nanos before = device_.elapsed();
  device_.copy(to, from, size);
  copy_time_ += device_.elapsed() - before;
  pool_.moved(from, to, size);
  where_[id] = to;
  bytes_moved_ += size;
  ++blocks_moved_;
  if (listener_) listener_->moved(Move{AllocId{id}, from, to, size});
}

// Lays every block out again, lowest address first, each at the lowest address of a
// segment that holds it. Blocks only ever move down, so copying in address order never
// overwrites a live one.
CompactPolicy::SlidePlan CompactPolicy::plan_slide() const {
  SlidePlan plan;
  plan.ids = live_by_address();
  plan.to.resize(plan.ids.size());
  const std::span<const PooledSegment> held = pool_.segments();
  std::vector<Bytes> after(held.size(), 0);  // live bytes per segment once slid
  std::size_t segment = 0;
  Addr cursor = held.empty() ? 0 : held[0].start;
  for (std::size_t k = 0; k < plan.ids.size(); ++k) {
    const Bytes size = size_[plan.ids[k]];
    while (cursor + size > held[segment].end) {
      plan.largest_hole = std::max(plan.largest_hole, held[segment].end - cursor);
      ++segment;
      cursor = held[segment].start;
    }
    plan.to[k] = cursor;
    plan.moves |= cursor != where_[plan.ids[k]];
    after[segment] += size;
    cursor += size;
  }
  for (; segment < held.size(); ++segment, cursor = segment < held.size() ? held[segment].start : 0) {
    plan.largest_hole = std::max(plan.largest_hole, held[segment].end - cursor);
  }
  for (std::size_t k = 0; k < held.size(); ++k) plan.emptied += after[k] == 0 ? held[k].segment.bytes : 0;
  plan.in_last = after.empty() ? 0 : after.back();
  return plan;
}

void CompactPolicy::apply(const SlidePlan& plan) {
  for (std::size_t k = 0; k < plan.ids.size(); ++k) {
    if (plan.to[k] != where_[plan.ids[k]]) move(plan.ids[k], plan.to[k]);
  }
  rebuild_free_list();
  compactions_ += plan.moves;
  freed_since_compaction_ = 0;
}

// Compacts only when the slid layout will hold `size` (0: always).
bool CompactPolicy::slide(Bytes size) {
  const SlidePlan plan = plan_slide();
  if (size > 0 && plan.largest_hole < size) return false;
  apply(plan);
  return true;
}

// The device is short, but sliding would empty whole segments: slide, give those back,
// and take one that holds the request.
bool CompactPolicy::consolidate(Bytes size) {
  const SlidePlan plan = plan_slide();
  const Bytes needed = align_up(size + kGuard, std::max(kBlockAlignment, device_.granularity()));
  if (plan.emptied == 0 || device_.available() + plan.emptied < needed) return false;
  apply(plan);
  release_cached();
  return grow(size);
}

// The window [p, p + size) inside one segment, starting at the segment or right after a
// block, that overlaps the fewest live bytes; those blocks go, largest first, to the best
// fitting free ranges outside it. False (nothing moved) when they do not all fit.
bool CompactPolicy::open_gap(Bytes size) {
  const std::vector<std::uint32_t> ids = live_by_address();
  std::vector<Bytes> prefix(ids.size() + 1, 0);
  for (std::size_t k = 0; k < ids.size(); ++k) prefix[k + 1] = prefix[k] + size_[ids[k]];
  Bytes best_cost = std::numeric_limits<Bytes>::max();
  Addr best_start = 0;
  std::size_t best_lo = 0;
  std::size_t best_hi = 0;
  std::size_t first = 0;  // the segment's first block in ids
  for (const PooledSegment& held : pool_.segments()) {
    std::size_t end = first;
    while (end < ids.size() && where_[ids[end]] < held.end) ++end;
    std::size_t hi = first;
    for (std::size_t lo = first; lo <= end; ++lo) {
      const Addr start = lo == first ? held.start : where_[ids[lo - 1]] + size_[ids[lo - 1]];
      if (start + size > held.end) break;
      hi = std::max(hi, lo);
      while (hi < end && where_[ids[hi]] < start + size) ++hi;
      if (prefix[hi] - prefix[lo] < best_cost) {
        best_cost = prefix[hi] - prefix[lo];
        best_start = start;
        best_lo = lo;
        best_hi = hi;
      }
    }
    first = end;
  }
  if (best_cost == std::numeric_limits<Bytes>::max()) return false;
  // Free ranges outside the window, for best fit (none of them touch, so none merge).
  FreeList& room = room_;
  room.clear();
  const Addr window_end = best_start + size;
  pool_.free().for_each([&](Range range) {
    if (range.addr < best_start) room.add(Range{range.addr, std::min(range.end(), best_start) - range.addr});
    if (range.end() > window_end) {
      const Addr from = std::max(range.addr, window_end);
      room.add(Range{from, range.end() - from});
    }
  });
  std::vector<std::uint32_t> victims(ids.begin() + static_cast<std::ptrdiff_t>(best_lo),
                                     ids.begin() + static_cast<std::ptrdiff_t>(best_hi));
  std::stable_sort(victims.begin(), victims.end(), [&](std::uint32_t a, std::uint32_t b) { return size_[a] > size_[b]; });
  std::vector<Addr> to(victims.size());
  for (std::size_t k = 0; k < victims.size(); ++k) {
    const auto fit = room.best_fit(size_[victims[k]]);
    if (!fit) return false;
    to[k] = fit->addr;
    room.take_front(*fit, size_[victims[k]]);
  }
  for (std::size_t k = 0; k < victims.size(); ++k) move(victims[k], to[k]);
  rebuild_free_list();
  ++compactions_;
  return true;
}

void CompactPolicy::rebuild_free_list() {
  pool_.free().clear();
  const std::vector<std::uint32_t> ids = live_by_address();
  std::size_t k = 0;
  for (const PooledSegment& held : pool_.segments()) {
    Addr cursor = held.start;
    for (; k < ids.size() && where_[ids[k]] < held.end; ++k) {
      if (where_[ids[k]] > cursor) pool_.free().add(Range{cursor, where_[ids[k]] - cursor});
      cursor = where_[ids[k]] + size_[ids[k]];
    }
    if (cursor < held.end) pool_.free().add(Range{cursor, held.end - cursor});
  }
}

PolicyStats CompactPolicy::stats() const {
  return PolicyStats{.allocated = allocated_, .reserved = pool_.reserved(), .largest_free = pool_.free().largest()};
}

void CompactPolicy::release_cached() { pool_.release_empty(); }

void CompactPolicy::check() const {
  pool_.check("compact", kBlockAlignment);
  Bytes in_segments = 0;
  for (const PooledSegment& held : pool_.segments()) in_segments += held.live;
  if (in_segments != allocated_) throw Error("compact: segments count " + std::to_string(in_segments) + " bytes live, not " + std::to_string(allocated_));
  const std::vector<std::uint32_t> ids = live_by_address();
  for (std::size_t k = 0; k < ids.size(); ++k) {
    const PooledSegment& held = pool_.segments()[pool_.segment_of(where_[ids[k]])];
    if (where_[ids[k]] + size_[ids[k]] > held.end) throw Error("compact: a block crosses a segment's end");
    if (k > 0 && where_[ids[k - 1]] + size_[ids[k - 1]] > where_[ids[k]]) throw Error("compact: live blocks overlap");
  }
}

PolicyInspection CompactPolicy::inspect(Detail detail) const {
  PolicyInspection inspection{pool_.releasable(),
                              {PolicyStat{"compactions", compactions_, Unit::count},
                               PolicyStat{"compaction_blocks_moved", blocks_moved_, Unit::count},
                               PolicyStat{"compaction_bytes_moved", bytes_moved_, Unit::bytes},
                               PolicyStat{"compaction_time_ns", copy_time_, Unit::nanos}},
                              {}};
  if (detail == Detail::full) {
    inspection.state = "compact: " + std::to_string(pool_.segments().size()) + " segments, " +
                       format_bytes(pool_.reserved()) + " reserved, " + format_bytes(pool_.free().total()) +
                       " free in " + std::to_string(pool_.free().count()) + " ranges, the largest " +
                       format_bytes(pool_.free().largest()) + "; " + std::to_string(compactions_) +
                       " compactions so far";
  }
  return inspection;
}

}  // namespace allocsim
