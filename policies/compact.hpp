// compact (alias defrag): best fit that moves live blocks when fragmentation would make a
// request fail, as runtimes that reach tensors through handles can (a moving collector
// for device memory; TensorFlow and PyTorch cannot, since they hand out raw pointers).
// - best fit with coalescing over the segments it holds (policies/common/free_list);
//   growing by segments, each keeps its last 256 B as a guard, so free ranges of
//   segments that touch never merge;
// - trigger=failure: when no free range fits but the free bytes in total do, compact
//   first, if the compacted layout will hold the request; trigger=threshold also
//   compacts (slide) after a free that leaves external fragmentation above `threshold`,
//   once an eighth of the pool has been freed since the last compaction;
// - strategy=slide: every live block slides down, in address order, to the lowest
//   address that holds it (free space ends up at each segment's top);
//   strategy=gap (the default): open one gap of the request's size where the fewest
//   live bytes sit, moving those blocks into free ranges elsewhere (falls back to slide
//   if they do not fit);
// - only if that cannot serve the request does it grow (region > 0 or prealloc: one
//   region taken at the first request and never grown, like bestfit, without a guard):
//   grow=merge (default) slides everything down and replaces the highest segment, where
//   the spill-over sits, by one that holds its blocks and the request, so no free tail
//   is stranded there; only when those blocks are fewer bytes than the request (growth
//   never copies more than it serves), else, and with grow=add, a new segment of at
//   least `segment` bytes; when the device is too short for that, a slide that empties
//   whole segments gives them back first;
// - every move is a device copy (charged at the device's copy bandwidth) and is
//   reported to the move listener; release_cached() returns segments with no live block.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <vector>

#include "policies/common/segment_pool.hpp"
#include "sim/device.hpp"
#include "sim/policy.hpp"
#include "sim/spec.hpp"

namespace allocsim {

class CompactPolicy final : public Policy {
 public:
  static constexpr std::array kParams{
      ParamInfo{"trigger", ParamKind::text, "failure",
                "when to compact: failure (a request no free range fits) or threshold"},
      ParamInfo{"threshold", ParamKind::number, "0.5",
                "trigger=threshold: compact after a free leaves external fragmentation above this"},
      ParamInfo{"strategy", ParamKind::text, "gap",
                "gap (move the fewest bytes that open one gap) or slide (every block down)"},
      ParamInfo{"segment", ParamKind::bytes, "64MiB", "smallest segment taken from the device when the pool grows"},
      ParamInfo{"grow", ParamKind::text, "merge",
                "merge (re-make the top segment larger, copying its blocks) or add (a new segment)"},
      ParamInfo{"region", ParamKind::bytes, "0",
                "bytes of one fixed region taken at the first request; 0 = grow by segments"},
      ParamInfo{"prealloc", ParamKind::boolean, "false",
                "one fixed region of all free device memory at the first request, like bestfit and bfc"},
  };

  // What a spec sets, read once and checked without a device.
  struct Settings {
    bool on_threshold;  // trigger=threshold; else on failure
    double threshold;
    bool gap;           // strategy=gap; else slide
    bool merge;         // grow=merge; else add
    Bytes segment;
    Bytes region;
    bool prealloc;
  };
  static Settings settings(const Params& params);  // throws Error naming a bad value

  CompactPolicy(const Settings& settings, Device& device);
  ~CompactPolicy() override;

  Allocation allocate(const Request& request) override;
  void deallocate(const Block& block, Nanos now) override;
  PolicyStats stats() const override;
  void release_cached() override;
  Bytes rounded_size(Bytes requested) const override { return requested == 0 ? 0 : align_up(requested, kBlockAlignment); }
  void check() const override;
  PolicyInspection inspect(Detail detail) const override;
  void prepare(const ReplaySetup& setup) override;

 private:
  void size_for_ids(std::size_t count);
  static constexpr Bytes kGuard = kBlockAlignment;  // between segments, so free ranges never touch
  bool one_region() const { return region_bytes_ != 0 || prealloc_; }

  bool grow(Bytes size);
  bool grow_merging(Bytes size);
  bool compact_for(Bytes size);  // true when a free range of `size` exists afterwards
  struct SlidePlan {
    std::vector<std::uint32_t> ids;  // live, by address
    std::vector<Addr> to;            // where each goes
    Bytes largest_hole = 0;          // the largest free range afterwards
    Bytes emptied = 0;               // bytes of the segments left with no block
    Bytes in_last = 0;               // live bytes left in the highest segment
    bool moves = false;
  };
  SlidePlan plan_slide() const;
  void apply(const SlidePlan& plan);
  bool slide(Bytes size);        // size 0: compact unconditionally
  bool consolidate(Bytes size);
  bool open_gap(Bytes size);
  void move(std::uint32_t id, Addr to);
  std::vector<std::uint32_t> live_by_address() const;
  void rebuild_free_list();
  double external_fragmentation() const;

  Device& device_;
  bool on_threshold_;
  double threshold_;
  bool gap_;
  bool merge_;
  Bytes segment_bytes_;
  Bytes region_bytes_;
  bool prealloc_;
  MoveListener* listener_ = nullptr;
  SegmentPool pool_;
  FreeList room_;  // compact_for's free ranges outside the window: kept, so its bins keep their capacity
  std::vector<Addr> where_;                 // by AllocId: the live block's address now
  std::vector<Bytes> size_;                 // by AllocId
  std::vector<std::uint32_t> live_;         // ids of live blocks, unordered
  std::vector<std::uint32_t> live_slot_;    // by AllocId: index in live_
  Bytes allocated_ = 0;
  Bytes freed_since_compaction_ = 0;
  std::uint64_t compactions_ = 0;
  std::uint64_t blocks_moved_ = 0;
  Bytes bytes_moved_ = 0;
  Nanos copy_time_ = 0;
};

}  // namespace allocsim
