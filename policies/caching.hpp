// caching: PyTorch's CUDA caching allocator (c10/cuda/CUDACachingAllocator.cpp, the
// native backend), as ../shared/reference/allocators.md section 2 describes it.
// - sizes round to 512 B (or to power-of-two divisions with roundup_power2_divisions);
//   up to 1 MiB comes from the small pool in 2 MiB segments, larger from the large pool
//   in 20 MiB segments (under 10 MiB) or the size rounded to 2 MiB;
// - per-stream best fit by (size, address); max_split_size keeps oversize blocks whole
//   and away from small requests; a block is split when the rest is >= 512 B (small
//   pool) or > 1 MiB (large pool, requests under max_split_size);
// - freed blocks merge with free neighbours in their segment; segments go back to the
//   device only on empty_cache() and on the OOM path: release oversize cached blocks,
//   then every unsplit cached block, then retry once;
// - set_per_process_memory_fraction caps reserved bytes; garbage_collection_threshold
//   frees the oldest unsplit large blocks above that share of the cap.
// - expandable_segments (the `expandable` policy): one address range per stream and pool,
//   reserved from the device, mapped in 2 MiB (small) or 20 MiB (large) pages of physical
//   memory as blocks need them (one map call per block grown); releasing unmaps the whole
//   pages inside free blocks.
// Not modelled yet: cross-stream frees (recordStream events), CUDA graph pools, the
// cudaMallocAsync backend.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <string_view>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "policies/common/memory_cap.hpp"
#include "policies/common/size_bins.hpp"
#include "policies/common/slots.hpp"
#include "policies/recording_adoption.hpp"
#include "sim/device.hpp"
#include "sim/policy.hpp"
#include "sim/spec.hpp"

namespace allocsim {

// Sizes the caching allocator's files share: PyTorch's kMinBlockSize (every block's size
// and offset are multiples of it) and an expandable segment's page in each pool.
inline constexpr Bytes kMinBlockSize = 512;
inline constexpr Bytes kSmallPage = 2_MiB;
inline constexpr Bytes kLargePage = 20_MiB;

// roundup_power2_divisions for each power-of-two interval from 1 MiB ([1, 2) MiB, ...,
// [32, 64) GiB and above); sizes under 1 MiB use the first.
using RoundupDivisions = std::array<std::uint64_t, 16>;
// "4" (every interval) or PyTorch's list form "[256:1,512:2,>:4]" (keys in MB).
RoundupDivisions parse_roundup_divisions(std::string_view text);

// round_size with `divisions` for the size's interval (0 or 1: plain 512-B rounding).
Bytes torch_round_size(Bytes size, std::uint64_t divisions);
Bytes torch_round_size(Bytes size, const RoundupDivisions& divisions);
// The segment a rounded size asks the device for: 2 MiB, 20 MiB or rounded to 2 MiB.
Bytes torch_allocation_size(Bytes rounded);

// The caching allocator's options; `expandable` differs only in expandable_segments' default.
constexpr std::array<ParamInfo, 7> caching_params(std::string_view expandable_default) {
  return {
      ParamInfo{"max_split_size", ParamKind::text, "unlimited",
                "blocks this large are never split or given to smaller requests",
                "max_split_size_mb", "MiB"},
      ParamInfo{"max_non_split_rounding", ParamKind::text, "20MiB",
                "how much larger than an oversize request a cached block may be",
                "max_non_split_rounding_mb", "MiB"},
      ParamInfo{"roundup_power2_divisions", ParamKind::text, "0",
                "divisions of each power of two to round sizes up to: one number, "
                "or per interval as [256:1,512:2,>:4] (MB)"},
      ParamInfo{"gc_threshold", ParamKind::number, "0",
                "free old cached blocks above t x the cap (0 < t < 1, needs fraction)",
                "garbage_collection_threshold"},
      ParamInfo{"fraction", ParamKind::number, "0",
                "set_per_process_memory_fraction: cap reserved bytes at this share of total; "
                "0 = no cap", "per_process_memory_fraction"},
      ParamInfo{"expandable_segments", ParamKind::boolean, expandable_default,
                "one virtual segment per stream and pool, mapped in 2 MiB / 20 MiB pages on demand"},
      ParamInfo{"conf", ParamKind::text, "",
                "a PYTORCH_CUDA_ALLOC_CONF string with '+' (or a quoted ';') between entries, e.g. "
                "max_split_size_mb:128+roundup_power2_divisions:4; applied after the keys above"},
  };
}

// What a spec sets, read and checked without a device: its keys, then its conf.
struct CachingSettings {
  Bytes max_split_size;
  Bytes max_non_split_rounding;
  RoundupDivisions divisions{};
  double gc_threshold;
  double fraction;
  bool expandable;
};
CachingSettings caching_settings(const Params& params);  // throws Error naming a bad value

class CachingPolicy final : public Policy {
 public:
  static constexpr auto kParams = caching_params("false");
  static constexpr auto kExpandableParams = caching_params("true");

  using Settings = CachingSettings;
  static Settings settings(const Params& params) { return caching_settings(params); }
  // Free blocks of every segment in one pool, picked by size then address.
  static SegmentTraits segment_traits(const Settings& settings) {
    return {.places_by_address = true, .page_mapped = settings.expandable};
  }

  CachingPolicy(const Settings& settings, Device& device);
  ~CachingPolicy() override;

  Allocation allocate(const Request& request) override;
  void deallocate(const Block& block, Nanos now) override;
  PolicyStats stats() const override;
  void release_cached() override { release_cached_blocks(); }
  void check() const override;
  PolicyInspection inspect(Detail detail) const override;
  void prepare(const ReplaySetup& setup) override;
  Bytes rounded_size(Bytes requested) const override;

  // expandable_segments, as the spec or its conf set it.
  bool expandable() const { return expandable_; }

 private:
  // Replaying a recording (policies/caching_adoption.cpp) adopts segments and reads the
  // layout through RecordingAdoption, defined there with the members below.
  friend class CachingAdoption;
  using HeldBlock = RecordingAdoption::HeldBlock;
  using LaidBlock = RecordingAdoption::LaidBlock;
  using SegmentLayout = RecordingAdoption::SegmentLayout;
  std::optional<Addr> adopt_segment(Bytes size, Stream stream, bool small, std::span<const HeldBlock> allocated);
  std::optional<Addr> adopt_expandable_range(Bytes mapped, Stream stream, bool small,
                                             std::span<const HeldBlock> allocated);
  std::vector<SegmentLayout> layout() const;
  bool release_segment(Addr addr);

  std::vector<PolicyStat> extra_stats() const;
  Bytes largest_cached() const;  // O(streams): stats() is read at every new peak
  static constexpr std::uint32_t kNone = kNoNeighbour;

  struct CachedBlock {
    Addr ptr;
    Bytes size;
    Bytes requested;
    std::uint32_t prev;  // neighbours within the segment
    std::uint32_t next;
    Stream stream;
    bool small;
    bool allocated;
    bool mapped;  // backed by device memory; false only for unmapped expandable address space
    std::uint64_t gc_base;  // the pool's lookup count when it was cached
  };
  struct UnmappedKey {  // expandable address space, found lowest address first
    Addr ptr;
    std::uint32_t block;
    Stream stream;
    friend bool operator<(const UnmappedKey& a, const UnmappedKey& b) {
      return a.stream != b.stream ? a.stream < b.stream : a.ptr < b.ptr;
    }
  };
  // A pool orders its free blocks by (stream, size, address), as PyTorch's
  // BlockComparatorSize does: per stream, flat size bins (a best fit is a binary search in
  // one short vector). Unmapped space is a sorted vector: a few ranges per stream.
  struct Pool {
    std::vector<std::pair<Stream, SizeBins>> streams;  // by stream; free, mapped blocks
    std::vector<UnmappedKey> unmapped;                 // sorted
    std::uint64_t lookups = 0;

    SizeBins* find(Stream stream);
    const SizeBins* find(Stream stream) const;
    SizeBins& bins(Stream stream);  // made on first use
    std::size_t count() const;      // free mapped blocks
    template <typename Visit>
    void for_each(Visit visit) const {  // every free mapped block, by (stream, size, address)
      for (const auto& [stream, bins] : streams) bins.for_each(visit);
    }
    void add_unmapped(const UnmappedKey& key);
    void erase_unmapped(const UnmappedKey& key);
    bool has_unmapped(const UnmappedKey& key) const;
  };
  // An expandable segment: address space for 1.125 x the device (reserve_addresses),
  // mapped page by page.
  struct VirtualSegment {
    Addr base;          // aligned to the page
    Bytes page;
    std::vector<Addr> pages;  // each page's physical memory (create_physical); 0 while unmapped
    Addr reserved_at;   // the reservation holding [base, base + pages * page)
    Bytes reserved_bytes;
  };

  Bytes round_size(Bytes size) const;  // torch_round_size with divisions_, quicker without them
  Pool& pool_of(bool small) { return small ? small_ : large_; }
  const Pool& pool_of_const(bool small) const { return small ? small_ : large_; }
  void cache(std::uint32_t block);
  void uncache(std::uint32_t block);
  std::uint32_t get_free_block(Pool& pool, Stream stream, Bytes size);
  std::uint32_t alloc_block(Bytes size, Bytes alloc_size, bool small, Stream stream, bool is_retry);
  bool release_available_cached_blocks(Pool& pool, Stream stream, Bytes size);
  void release_cached_blocks();
  void release_block(std::uint32_t block);
  void garbage_collect_cached_blocks();
  void retire(std::uint32_t block);
  void merge(std::uint32_t left, std::uint32_t right);
  std::uint32_t absorb_free_neighbours(std::uint32_t block);
  void forget(std::uint32_t block);  // takes a free block out of whichever set holds it
  UnmappedKey unmapped_key_of(std::uint32_t block) const;
  // Expandable segments (caching_expandable.cpp), after PyTorch's functions of these names.
  std::uint32_t try_allocate_expandable_block(Pool& pool, Stream stream, Bytes size, bool small);
  std::uint32_t find_expandable_block(Pool& pool, Stream stream, Bytes size, bool small);
  std::uint32_t new_virtual_segment(Pool& pool, Stream stream, bool small);  // its space, unmapped
  std::uint32_t map_block(std::uint32_t block, Bytes size);
  void unmap_block(std::uint32_t block);
  std::size_t virtual_segment_of(Addr ptr) const;  // the index of the segment holding ptr
  // The pages [first, end) lying wholly inside a block of an expandable segment.
  std::pair<std::size_t, std::size_t> whole_pages(const VirtualSegment& segment, std::uint32_t block) const;
  Bytes whole_free_pages(std::uint32_t block) const;  // for stats().releasable
  void check_pages() const;
  bool unsplit(std::uint32_t block) const { return blocks_[block].prev == kNone && blocks_[block].next == kNone; }
  void note_peaks();
  // Marks `allocated` held in the free, uncached `rest` starting at `base` (adopt_*): the
  // gaps before them and what is left after are cached.
  void hold_blocks(std::uint32_t rest, Addr base, std::span<const HeldBlock> allocated);
  void check_held(Bytes size, std::span<const HeldBlock> allocated) const;  // throws Error naming why not

  Device& device_;
  Bytes max_split_size_;
  Bytes max_non_split_rounding_;
  RoundupDivisions divisions_{};
  bool plain_rounding_ = true;  // no interval has divisions: every size rounds to 512 B
  double gc_threshold_;
  MemoryCap cap_;  // set_per_process_memory_fraction's cap on reserved bytes
  bool expandable_ = false;  // every segment is expandable, or none is

  Pool small_;
  Pool large_;
  Slots<CachedBlock> blocks_;
  std::vector<std::uint32_t> block_of_;  // by AllocId
  std::vector<VirtualSegment> virtual_segments_;  // by base address
  std::vector<Segment> created_;  // map_block's pages of one map call, kept so that growing allocates nothing

  // memory_stats, "all" pools
  Bytes allocated_ = 0, reserved_ = 0, requested_ = 0;
  Bytes peak_allocated_ = 0, peak_reserved_ = 0, peak_requested_ = 0;
  std::uint64_t segments_ = 0, peak_segments_ = 0;
  std::uint64_t num_alloc_retries_ = 0, num_ooms_ = 0, num_device_alloc_ = 0, num_device_free_ = 0;
};

}  // namespace allocsim
