#include "policies/placement.hpp"

#include <algorithm>
#include <bit>
#include <string>

#include "sim/error.hpp"

namespace allocsim {

PlacementPolicy::PlacementPolicy(Fit fit, const Params& params, Device& device)
    : fit_(fit),
      device_(device), region_bytes_(params.bytes("region")), alignment_(params.bytes("alignment")) {
  if (alignment_ < kBlockAlignment || !std::has_single_bit(alignment_)) {
    throw Error(std::string("policy ") + name() + ": alignment=" + std::to_string(alignment_) + " is not a power of two >= 256");
  }
  if (region_bytes_ % alignment_ != 0) {
    throw Error(std::string("policy ") + name() + ": region=" + format_bytes(region_bytes_) + " is not a multiple of the alignment");
  }
}

PlacementPolicy::~PlacementPolicy() {
  if (region_) device_.free(*region_);
}

bool PlacementPolicy::acquire_region() {
  const Bytes page = std::max(alignment_, device_.granularity());
  const Bytes bytes = region_bytes_ != 0 ? region_bytes_ : align_down(device_.available(), page);
  if (bytes == 0) return false;
  region_ = device_.malloc(bytes);
  if (!region_) return false;
  // The device promises only kSegmentAlignment; skip to the first aligned address.
  const Addr start = align_up(region_->addr, alignment_);
  if (start < region_->addr + region_->bytes) free_.add(Range{start, region_->addr + region_->bytes - start});
  return true;
}

std::optional<Block> PlacementPolicy::allocate(const Request& request) {
  if (!region_ && !acquire_region()) return std::nullopt;
  const Bytes size = align_up(std::max<Bytes>(request.bytes, 1), alignment_);
  const auto range = choose(size);
  if (!range) return std::nullopt;
  free_.take_front(*range, size);
  allocated_ += size;
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
}

PolicyStats PlacementPolicy::stats() const {
  const Bytes reserved = region_ ? region_->bytes : 0;
  return PolicyStats{.allocated = allocated_,
                     .reserved = reserved,
                     .largest_free = free_.largest(),
                     .releasable = allocated_ == 0 ? reserved : 0};
}

void PlacementPolicy::release_cached() {
  if (!region_ || allocated_ != 0) return;
  free_.clear();
  device_.free(*region_);
  region_.reset();
}

void PlacementPolicy::check() const {
  free_.check();
  if (!region_) {
    if (free_.count() != 0 || allocated_ != 0) throw Error(std::string(name()) + ": blocks without a region");
    return;
  }
  const Bytes usable = region_->addr + region_->bytes - std::min(align_up(region_->addr, alignment_), region_->addr + region_->bytes);
  if (free_.total() + allocated_ != usable) {
    throw Error(std::string(name()) + ": free " + std::to_string(free_.total()) + " + allocated " + std::to_string(allocated_) +
                " != usable region " + std::to_string(usable));
  }
  free_.for_each([&](Range range) {
    if (range.addr % alignment_ != 0 || range.size % alignment_ != 0) throw Error(std::string(name()) + ": unaligned free range");
    if (range.addr < region_->addr || range.end() > region_->addr + region_->bytes) {
      throw Error(std::string(name()) + ": free range outside the region");
    }
  });
}

}  // namespace allocsim
