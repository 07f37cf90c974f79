// bestfit: address-ordered best fit with coalescing over one region.
//
// The textbook placement that TensorFlow's BFC refines with bins and a split rule
// (tsl/framework/bfc_allocator.cc): kept plain here as a baseline for research.
// - the first request takes one region from the device: `region` bytes, or by default all
//   the device has free at that moment (like TensorFlow's greedy default);
// - requests round up to `alignment`; the smallest free range that fits is used, the
//   lowest address among equals, and the rest of it stays free (always split);
// - a freed block merges with free neighbours; the region is never grown;
// - release_cached() returns the region when no block is live, so the next request takes
//   a fresh one.
#pragma once

#include <array>
#include <optional>

#include "policies/common/free_list.hpp"
#include "sim/device.hpp"
#include "sim/policy.hpp"
#include "sim/spec.hpp"

namespace allocsim {

class BestFitPolicy final : public Policy {
 public:
  static constexpr std::array kParams{
      ParamInfo{"region", "0", "bytes of the one region; 0 = all free device memory at the first request"},
      ParamInfo{"alignment", "256", "every block's size and address are multiples of this (a power of two >= 256)"},
  };

  BestFitPolicy(const Params& params, Device& device);
  ~BestFitPolicy() override;

  std::optional<Block> allocate(const Request& request) override;
  void deallocate(const Block& block, Nanos now) override;
  PolicyStats stats() const override;
  void release_cached() override;
  void check() const override;

 private:
  bool acquire_region();

  Device& device_;
  Bytes region_bytes_;  // 0 = whatever is free
  Bytes alignment_;
  std::optional<Segment> region_;
  FreeList free_;
  Bytes allocated_ = 0;
};

}  // namespace allocsim
