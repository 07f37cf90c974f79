#include "policies/bestfit.hpp"

#include <algorithm>
#include <bit>
#include <string>

#include "sim/error.hpp"

namespace allocsim {

BestFitPolicy::BestFitPolicy(const Params& params, Device& device)
    : device_(device), region_bytes_(params.bytes("region")), alignment_(params.bytes("alignment")) {
  if (alignment_ < kBlockAlignment || !std::has_single_bit(alignment_)) {
    throw Error("policy bestfit: alignment=" + std::to_string(alignment_) + " is not a power of two >= 256");
  }
  if (region_bytes_ % alignment_ != 0) {
    throw Error("policy bestfit: region=" + format_bytes(region_bytes_) + " is not a multiple of the alignment");
  }
}

BestFitPolicy::~BestFitPolicy() {
  if (region_) device_.free(*region_);
}

bool BestFitPolicy::acquire_region() {
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

std::optional<Block> BestFitPolicy::allocate(const Request& request) {
  if (!region_ && !acquire_region()) return std::nullopt;
  const Bytes size = align_up(std::max<Bytes>(request.bytes, 1), alignment_);
  const auto range = free_.best_fit(size);
  if (!range) return std::nullopt;
  free_.take_front(*range, size);
  allocated_ += size;
  return Block{range->addr, size, request.bytes, request.id, request.stream};
}

void BestFitPolicy::deallocate(const Block& block, Nanos) {
  free_.add(Range{block.addr, block.size});
  allocated_ -= block.size;
}

PolicyStats BestFitPolicy::stats() const {
  const Bytes reserved = region_ ? region_->bytes : 0;
  return PolicyStats{.allocated = allocated_,
                     .reserved = reserved,
                     .largest_free = free_.largest(),
                     .releasable = allocated_ == 0 ? reserved : 0};
}

void BestFitPolicy::release_cached() {
  if (!region_ || allocated_ != 0) return;
  free_.clear();
  device_.free(*region_);
  region_.reset();
}

void BestFitPolicy::check() const {
  free_.check();
  if (!region_) {
    if (free_.count() != 0 || allocated_ != 0) throw Error("bestfit: blocks without a region");
    return;
  }
  const Bytes usable = region_->addr + region_->bytes - std::min(align_up(region_->addr, alignment_), region_->addr + region_->bytes);
  if (free_.total() + allocated_ != usable) {
    throw Error("bestfit: free " + std::to_string(free_.total()) + " + allocated " + std::to_string(allocated_) +
                " != usable region " + std::to_string(usable));
  }
  free_.for_each([&](Range range) {
    if (range.addr % alignment_ != 0 || range.size % alignment_ != 0) throw Error("bestfit: unaligned free range");
    if (range.addr < region_->addr || range.end() > region_->addr + region_->bytes) {
      throw Error("bestfit: free range outside the region");
    }
  });
}

}  // namespace allocsim
