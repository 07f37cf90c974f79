// vmm: virtual-memory stitching, as GMLake (ASPLOS'24) does with CUDA's VMM API (PyTorch's
// expandable segments, policies/expandable, map pages at the end of one range): physical
// memory is a pool of pages, and a large request is served by mapping any free pages,
// wherever they lie, into one new contiguous virtual range. No byte is copied, and free
// memory in holes is never lost to fragmentation, only to page rounding.
// - physical pages of `page` bytes come from the device one at a time (create_physical,
//   cuMemCreate) and stay in the pool until release_cached();
// - a request of at least one page takes ceil(bytes / page) pages, mapped (cuMemMap,
//   in one device map call, charged by the device's map cost) at a fresh virtual range
//   inside address space reserved once (cuMemAddressReserve); on free the range stays
//   mapped in a cache by page count, reused as is by the next request of that many pages
//   (GMLake's stitched-block pool); the cache is unmapped (charged) when pages run short;
// - a smaller request is placed best fit in "small pages" (one page each, mapped on
//   their own), like the caching allocator's small pool; an empty small page goes back to
//   the pool when pages run short;
// - pages run short: unmap empty small pages, then cached ranges, then take new pages
//   from the device; if the device has none left, OOM.
// Deviation: GMLake also splits and stitches cached ranges of other sizes; here a range
// is reused only for the same page count, else its pages are unmapped and remapped.
#pragma once

#include <array>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>
#include <vector>

#include "policies/common/node_pool.hpp"
#include "policies/common/tiled_ranges.hpp"
#include "sim/device.hpp"
#include "sim/policy.hpp"
#include "sim/spec.hpp"

namespace allocsim {

class VmmPolicy final : public Policy {
 public:
  static constexpr std::array kParams{
      ParamInfo{"page", ParamKind::bytes, "2MiB",
                "physical page (mapping granularity): a multiple of 256 B; requests of a page or more are stitched"},
      ParamInfo{"cache", ParamKind::boolean, "true",
                "keep freed stitched ranges mapped for reuse by a request of the same page count"},
  };

  // What a spec sets, read once and checked without a device.
  struct Settings {
    Bytes page;
    bool cache;
  };
  static Settings settings(const Params& params);  // throws Error naming a bad value
  static SegmentTraits segment_traits(const Settings&) { return {.page_mapped = true}; }

  VmmPolicy(const Settings& settings, Device& device);
  ~VmmPolicy() override;

  Allocation allocate(const Request& request) override;
  void deallocate(const Block& block, Nanos now) override;
  PolicyStats stats() const override;
  void release_cached() override;
  void check() const override;
  void prepare(const ReplaySetup& setup) override;
  PolicyInspection inspect(Detail detail) const override;

 private:
  bool take_pages(std::uint64_t count);  // makes `count` pages free (unmapped), or fails
  bool reclaim_one();                    // unmaps one empty small page or cached range
  Addr new_virtual_range(std::uint64_t pages);
  void map_free_pages(Addr at, std::uint64_t count);  // the last `count` free pages, at `at`
  void unmap_range(Addr at);                           // its pages become free
  std::optional<Block> allocate_small(const Request& request, Bytes size);

  Device& device_;
  Bytes page_;
  bool cache_;
  Addr virtual_next_ = 0;
  Addr virtual_end_ = 0;
  std::vector<Segment> reservations_;  // address ranges from the device, given back at the end
  std::uint64_t held_pages_ = 0;     // every physical page held
  std::vector<Segment> free_pages_;  // held and mapped nowhere
  std::uint64_t large_pages_ = 0;    // mapped under live large blocks
  // Tree and hash nodes come from a pool, so that a steady state allocates nothing.
  pooled::NodePool pool_;
  // Every mapped range (large blocks, cached ranges, small pages) -> its physical pages in
  // order: what unmapping it gives back.
  pooled::unordered_map<Addr, pooled::vector<Segment>> mapped_{&pool_};
  pooled::multimap<std::uint64_t, Addr> cached_{&pool_};  // page count -> a freed range, still mapped
  std::uint64_t cached_pages_ = 0;
  TiledRanges small_free_;  // inside mapped small pages, each page a range of its own
  pooled::unordered_map<Addr, Bytes> small_pages_{&pool_};  // virtual page -> live bytes in it
  pooled::set<Addr> empty_small_{&pool_};                   // small pages with nothing live
  Bytes allocated_ = 0;
  std::uint64_t maps_ = 0;
  std::uint64_t unmaps_ = 0;
  std::uint64_t stitched_ = 0;  // large requests served by a new mapping
  std::uint64_t reused_ = 0;    // large requests served from the cache
};

}  // namespace allocsim
