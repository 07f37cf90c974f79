// buddy: the binary buddy system (Knowlton 1965; Knuth, TAOCP 2.5) over one region.
//
// A research baseline for power-of-two placement.
// - the first request takes one region: the largest power of two <= `region`, or <= all
//   the device has free, at least min_block;
// - a request rounds up to a power of two >= min_block; the lowest-addressed free block of
//   the smallest order that fits is halved until it has the right size, the upper halves
//   staying free;
// - a freed block merges with its buddy while the buddy is free;
// - release_cached() returns the region when no block is live.
// Its waste is internal: a request of 2^k + 1 bytes takes 2^(k+1).
#pragma once

#include <array>
#include <optional>
#include <vector>

#include "sim/device.hpp"
#include "sim/policy.hpp"
#include "sim/spec.hpp"

namespace allocsim {

class BuddyPolicy final : public Policy {
 public:
  static constexpr std::array kParams{
      ParamInfo{"region", ParamKind::bytes, "0",
                "bytes of the region (rounded down to a power of two); 0 = all free device memory"},
      ParamInfo{"min_block", ParamKind::bytes, "256", "the smallest block, a power of two >= 256"},
  };

  // What a spec sets, read once and checked without a device.
  struct Settings {
    Bytes region;
    Bytes min_block;
  };
  static Settings settings(const Params& params);  // throws Error naming a bad value

  BuddyPolicy(const Settings& settings, Device& device);
  ~BuddyPolicy() override;

  Allocation allocate(const Request& request) override;
  void deallocate(const Block& block, Nanos now) override;
  PolicyStats stats() const override;
  PolicyInspection inspect(Detail detail) const override;
  void release_cached() override;
  Bytes rounded_size(Bytes requested) const override { return requested == 0 ? 0 : size_of(order_of(requested)); }
  void check() const override;

 private:
  bool acquire_region();
  std::size_t order_of(Bytes size) const;  // blocks of order k are min_block << k bytes
  Bytes size_of(std::size_t order) const { return min_block_ << order; }

  Device& device_;
  Bytes region_bytes_;
  Bytes min_block_;
  std::optional<Segment> region_;
  Addr base_ = 0;  // the region's first aligned address: buddies pair relative to it
  std::size_t top_order_ = 0;
  // Free blocks by order, each a vector sorted by falling address: the lowest is popped
  // from the back, a buddy found by binary search (std::lower_bound: on lists of a few
  // blocks its branches cost less than a branch-free search's chain of loads, bench/ found);
  // capacity is kept, so a steady state allocates nothing.
  std::vector<std::vector<Addr>> free_;
  void insert_free(std::size_t order, Addr addr);
  Bytes allocated_ = 0;
};

}  // namespace allocsim
