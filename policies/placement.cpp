#include "policies/placement.hpp"

#include <algorithm>
#include <bit>
#include <string>

#include "sim/error.hpp"

namespace allocsim {
namespace {

// A pool searched by address alone keeps its free list in address order only.
template <typename Pool>
Pool pool_for(Fit fit, Device& device) {
  if constexpr (std::is_same_v<Pool, SegmentPool>) {
    return SegmentPool(device, searches_by_address(fit) ? FreeList::Orders::address : FreeList::Orders::address_and_size);
  } else {
    return Pool(device);
  }
}

}  // namespace

PlacementSettings placement_settings(const Params& params) {
  const PlacementSettings settings{
      .region = params.bytes("region"), .alignment = params.bytes("alignment"), .grow = params.bytes("grow")};
  if (settings.alignment < kBlockAlignment || !std::has_single_bit(settings.alignment)) {
    throw Error(params.owner() + ": alignment=" + std::to_string(settings.alignment) + " is not a power of two >= 256");
  }
  if (settings.region % settings.alignment != 0) {
    throw Error(params.owner() + ": region=" + format_bytes(settings.region) + " is not a multiple of the alignment");
  }
  return settings;
}

template <typename Pool>
PlacementPolicy<Pool>::PlacementPolicy(Fit fit, const PlacementSettings& settings, Device& device)
    : fit_(fit),
      device_(device), region_bytes_(settings.region), alignment_(settings.alignment),
      grow_bytes_(settings.grow), pool_(pool_for<Pool>(fit, device)) {
  if (kTiled && searches_by_address(fit)) throw Error(std::string("policy ") + name() + " searches by address");
}

template <typename Pool>
PlacementPolicy<Pool>::~PlacementPolicy() = default;

template <typename Pool>
bool PlacementPolicy<Pool>::add_segment(Bytes bytes) {
  // Grown segments keep a guard at their end, so that two segments' free ranges never touch.
  return pool_.add(bytes, alignment_, grow_bytes_ != 0 ? alignment_ : 0).has_value();
}

template <typename Pool>
bool PlacementPolicy<Pool>::acquire_region() {
  const Bytes page = std::max(alignment_, device_.granularity());
  const Bytes bytes = region_bytes_ != 0 ? region_bytes_ : align_down(device_.available(), page);
  return bytes != 0 && add_segment(bytes);
}

template <typename Pool>
bool PlacementPolicy<Pool>::grow(Bytes size) {
  const Bytes page = std::max(alignment_, device_.granularity());
  const Bytes least = align_up(size + 2 * alignment_, page);  // room for the guard and the start's alignment
  return add_segment(std::max(least, align_up(grow_bytes_, page))) || add_segment(least);
}

template <typename Pool>
Allocation PlacementPolicy<Pool>::allocate(const Request& request) {
  if (grow_bytes_ == 0 && pool_.segments().empty() && !acquire_region()) return std::nullopt;
  const Bytes size = align_up(std::max<Bytes>(request.bytes, 1), alignment_);
  auto range = take(size, request.id);
  if (!range && grow_bytes_ != 0 && grow(size)) range = take(size, request.id);
  if (!range) return std::nullopt;
  allocated_ += size;
  rover_ = range->addr + size;
  return Block{range->addr, size, request.bytes, request.id, request.stream};
}

template <typename Pool>
const char* PlacementPolicy<Pool>::name() const {
  switch (fit_) {
    case Fit::best:
      return "bestfit";
    case Fit::first:
      return "firstfit";
    case Fit::next:
      return "nextfit";
    case Fit::worst:
      return "worstfit";
  }
  return "placement";
}

template <typename Pool>
std::optional<Range> PlacementPolicy<Pool>::take(Bytes size, AllocId id) {
  if constexpr (kTiled) {
    const SizeBins::Cursor fit = fit_ == Fit::best ? pool_.best_fit(size) : pool_.worst_fit(size);
    if (fit == SizeBins::end()) return std::nullopt;
    return pool_.take(fit, size, id);
  } else {
    // The free list takes what its search found, so no index is searched twice.
    switch (fit_) {
      case Fit::best:
        return pool_.taken(pool_.free().take_best_fit(size), size);
      case Fit::first:
        return pool_.taken(pool_.free().take_first_fit(size), size);
      case Fit::next:
        return pool_.taken(pool_.free().take_next_fit(size, rover_), size);
      case Fit::worst:
        return pool_.taken(pool_.free().take_worst_fit(size), size);
    }
    return std::nullopt;
  }
}

template <typename Pool>
void PlacementPolicy<Pool>::deallocate(const Block& block, Nanos) {
  if constexpr (kTiled) {
    pool_.give(block.id, block.addr);
  } else {
    pool_.give(block.addr, block.size);
  }
  allocated_ -= block.size;
}

template <typename Pool>
PolicyStats PlacementPolicy<Pool>::stats() const {
  return PolicyStats{.allocated = allocated_, .reserved = pool_.reserved(), .largest_free = pool_.free().largest()};
}

template <typename Pool>
PolicyInspection PlacementPolicy<Pool>::inspect(Detail) const {
  return PolicyInspection{pool_.releasable(), {}, {}};
}

template <typename Pool>
void PlacementPolicy<Pool>::release_cached() { pool_.release_empty(); }

template <typename Pool>
void PlacementPolicy<Pool>::prepare(const ReplaySetup& setup) {
  if constexpr (kTiled) pool_.reserve_ids(setup.allocations);
}

template <typename Pool>
void PlacementPolicy<Pool>::check() const {
  Bytes live = 0;
  for (const PooledSegment& held : pool_.segments()) live += held.live;
  if (live != allocated_) throw Error(std::string(name()) + ": segments count other live bytes than the total");
  pool_.check(name(), alignment_);
}

template class PlacementPolicy<TiledSegments>;
template class PlacementPolicy<SegmentPool>;

}  // namespace allocsim
