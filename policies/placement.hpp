// The classic placements over one region: bestfit, firstfit, nextfit, worstfit.
//
// Textbook dynamic storage allocation (Knuth, TAOCP 2.5; Wilson et al., "Dynamic Storage
// Allocation: A Survey"), kept plain as baselines for research. TensorFlow's BFC is best
// fit refined with bins and a split rule (tsl/framework/bfc_allocator.cc).
// - the first request takes one region from the device: `region` bytes, or by default all
//   the device has free at that moment (like TensorFlow's greedy default);
// - requests round up to `alignment`; the free range is chosen by the policy's fit:
//   best (smallest that fits), first (lowest address), next (first at or after where the
//   last one ended, wrapping), worst (largest); ties go to the lowest address; the rest of
//   the range stays free (always split);
// - a freed block merges with free neighbours; the region is never grown;
// - or, with grow=SIZE, no region up front: when nothing fits, a new segment of at least
//   SIZE bytes (each keeps its last `alignment` bytes as a guard, so free ranges of
//   segments that touch never merge);
// - release_cached() returns every segment with no live block, so the next request takes
//   a fresh one.
// Two indexes of what is free serve them: bestfit and worstfit search by size only, so
// their segments are tiled by linked pieces (TiledSegments: a free merges without a
// search); firstfit and nextfit search by address (SegmentPool's address-ordered list).
// Both give the same blocks for best and worst fit; the tests compare them.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <type_traits>
#include <vector>

#include "policies/common/segment_pool.hpp"
#include "policies/common/tiled_segments.hpp"
#include "sim/device.hpp"
#include "sim/policy.hpp"
#include "sim/spec.hpp"

namespace allocsim {

enum class Fit : std::uint8_t { best, first, next, worst };

// First and next fit search the address order; best and worst fit need the size order alone.
constexpr bool searches_by_address(Fit fit) { return fit == Fit::first || fit == Fit::next; }

// The options of every fit, whichever pool serves it.
inline constexpr std::array kPlacementParams{
    ParamInfo{"region", ParamKind::bytes, "0",
              "bytes of the one region; 0 = all free device memory at the first request"},
    ParamInfo{"alignment", ParamKind::bytes, "256",
              "every block's size and address are multiples of this (a power of two >= 256)"},
    ParamInfo{"grow", ParamKind::bytes, "0",
              "0 = one region; else grow on demand by segments of at least this many bytes"},
};
// What a spec of any fit sets, read once and checked without a device.
struct PlacementSettings {
  Bytes region;
  Bytes alignment;
  Bytes grow;
};
PlacementSettings placement_settings(const Params& params);  // throws Error naming a bad value

// Pool: TiledSegments (best and worst fit only) or SegmentPool (every fit).
template <typename Pool>
class PlacementPolicy final : public Policy {
 public:
  static constexpr const auto& kParams = kPlacementParams;

  PlacementPolicy(Fit fit, const PlacementSettings& settings, Device& device);
  ~PlacementPolicy() override;

  Allocation allocate(const Request& request) override;
  void deallocate(const Block& block, Nanos now) override;
  PolicyStats stats() const override;
  PolicyInspection inspect(Detail detail) const override;
  void release_cached() override;
  Bytes rounded_size(Bytes requested) const override { return requested == 0 ? 0 : align_up(requested, alignment_); }
  void check() const override;
  void prepare(const ReplaySetup& setup) override;

 private:
  static constexpr bool kTiled = std::is_same_v<Pool, TiledSegments>;

  bool acquire_region();
  bool grow(Bytes size);
  bool add_segment(Bytes bytes);
  std::optional<Range> take(Bytes size, AllocId id);  // the free range `size` bytes were taken from
  const char* name() const;  // for messages

  Fit fit_;
  Device& device_;
  Bytes region_bytes_;  // 0 = whatever is free
  Bytes alignment_;
  Bytes grow_bytes_;  // 0 = one region
  Pool pool_;
  Bytes allocated_ = 0;
  Addr rover_ = 0;  // next fit: where the last block ended
};

using SizeFitPolicy = PlacementPolicy<TiledSegments>;     // bestfit, worstfit
using AddressFitPolicy = PlacementPolicy<SegmentPool>;   // firstfit, nextfit (and best and worst, to compare)

}  // namespace allocsim
