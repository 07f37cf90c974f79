#include "policies/placement.hpp"

#include <algorithm>
#include <bit>
#include <string>

#include "sim/error.hpp"

namespace allocsim {

PlacementPolicy::PlacementPolicy(Fit fit, const Params& params, Device& device)
    : fit_(fit),
      device_(device), region_bytes_(params.bytes("region")), alignment_(params.bytes("alignment")),
      grow_bytes_(params.bytes("grow")) {
  if (alignment_ < kBlockAlignment || !std::has_single_bit(alignment_)) {
    throw Error(std::string("policy ") + name() + ": alignment=" + std::to_string(alignment_) + " is not a power of two >= 256");
  }
  if (region_bytes_ % alignment_ != 0) {
    throw Error(std::string("policy ") + name() + ": region=" + format_bytes(region_bytes_) + " is not a multiple of the alignment");
  }
}

PlacementPolicy::~PlacementPolicy() {
  for (const Held& held : held_) device_.free(held.segment);
}

bool PlacementPolicy::add_segment(Bytes bytes) {
  const auto segment = device_.malloc(bytes);
  if (!segment) return false;
  // The device promises only kSegmentAlignment; skip to the first aligned address.
  const Addr start = std::min(align_up(segment->addr, alignment_), segment->addr + segment->bytes);
  const Addr end = std::max(start, segment->addr + segment->bytes - (grow_bytes_ != 0 ? alignment_ : 0));
  const Held held{*segment, start, end, 0};
  held_.insert(std::upper_bound(held_.begin(), held_.end(), held,
                                [](const Held& a, const Held& b) { return a.segment.addr < b.segment.addr; }),
               held);
  reserved_ += segment->bytes;
  if (start < end) free_.add(Range{start, end - start});
  return true;
}

bool PlacementPolicy::acquire_region() {
  const Bytes page = std::max(alignment_, device_.granularity());
  const Bytes bytes = region_bytes_ != 0 ? region_bytes_ : align_down(device_.available(), page);
  return bytes != 0 && add_segment(bytes);
}

bool PlacementPolicy::grow(Bytes size) {
  const Bytes page = std::max(alignment_, device_.granularity());
  const Bytes least = align_up(size + 2 * alignment_, page);  // room for the guard and the start's alignment
  return add_segment(std::max(least, align_up(grow_bytes_, page))) || add_segment(least);
}

std::size_t PlacementPolicy::segment_of(Addr addr) const {
  if (held_.size() == 1) return 0;
  const auto after = std::upper_bound(held_.begin(), held_.end(), addr,
                                      [](Addr a, const Held& held) { return a < held.segment.addr; });
  return static_cast<std::size_t>(after - held_.begin()) - 1;
}

Allocation PlacementPolicy::allocate(const Request& request) {
  if (grow_bytes_ == 0 && held_.empty() && !acquire_region()) return std::nullopt;
  const Bytes size = align_up(std::max<Bytes>(request.bytes, 1), alignment_);
  auto range = choose(size);
  if (!range && grow_bytes_ != 0 && grow(size)) range = choose(size);
  if (!range) return std::nullopt;
  free_.take_front(*range, size);
  allocated_ += size;
  held_[segment_of(range->addr)].allocated += size;
  rover_ = range->addr + size;
  return Block{range->addr, size, request.bytes, request.id, request.stream};
}

const char* PlacementPolicy::name() const {
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

std::optional<Range> PlacementPolicy::choose(Bytes size) const {
  switch (fit_) {
    case Fit::best:
      return free_.best_fit(size);
    case Fit::first:
      return free_.first_fit(size);
    case Fit::next:
      return free_.next_fit(size, rover_);
    case Fit::worst:
      return free_.worst_fit(size);
  }
  return std::nullopt;
}

void PlacementPolicy::deallocate(const Block& block, Nanos) {
  free_.add(Range{block.addr, block.size});
  allocated_ -= block.size;
  held_[segment_of(block.addr)].allocated -= block.size;
}

PolicyStats PlacementPolicy::stats() const {
  return PolicyStats{.allocated = allocated_, .reserved = reserved_, .largest_free = free_.largest()};
}

PolicyInspection PlacementPolicy::inspect() const {
  Bytes releasable = 0;
  for (const Held& held : held_) releasable += held.allocated == 0 ? held.segment.bytes : 0;
  return PolicyInspection{releasable, {}, {}};
}

void PlacementPolicy::release_cached() {
  std::erase_if(held_, [&](const Held& held) {
    if (held.allocated != 0) return false;
    if (held.start < held.end) free_.remove(Range{held.start, held.end - held.start});
    device_.free(held.segment);
    reserved_ -= held.segment.bytes;
    return true;
  });
}

void PlacementPolicy::check() const {
  free_.check();
  Bytes usable = 0;
  Bytes allocated = 0;
  for (const Held& held : held_) {
    usable += held.end - held.start;
    allocated += held.allocated;
  }
  if (allocated != allocated_) throw Error(std::string(name()) + ": segments count other live bytes than the total");
  if (free_.total() + allocated_ != usable) {
    throw Error(std::string(name()) + ": free " + std::to_string(free_.total()) + " + allocated " + std::to_string(allocated_) +
                " != usable region " + std::to_string(usable));
  }
  free_.for_each([&](Range range) {
    if (range.addr % alignment_ != 0 || range.size % alignment_ != 0) throw Error(std::string(name()) + ": unaligned free range");
    const Held& held = held_[segment_of(range.addr)];
    if (range.addr < held.start || range.end() > held.end) throw Error(std::string(name()) + ": free range outside its segment");
  });
}

}  // namespace allocsim
