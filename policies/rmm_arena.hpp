// rmm-arena: RAPIDS RMM's arena_memory_resource (rmm/mr/device/detail/arena.hpp and
// arena_memory_resource.hpp at HEAD 5d50a37b; ../shared/reference/allocators.md 4.3).
// - one upstream allocation (arena_size aligned down to 256 B) cut into superblocks, kept
//   in address order; it never grows;
// - sizes round up to 256 B (RMM_ARENA_USE_SIZE_CLASSES is off by default);
// - over 1 MiB: the global arena directly: the first superblock (by address) with a free
//   block that fits; an empty one of at least max(1 MiB, size) + 1 MiB is split, its front
//   taken; then first fit inside it; the superblock stays global;
// - up to 1 MiB: the stream's arena (RMM's per-stream arena; per-thread arenas are for the
//   per-thread default stream, which a trace does not have): first fit over its
//   superblocks, else a superblock acquired from the global arena the same way;
// - a free coalesces inside its superblock; a global superblock that becomes empty merges
//   with empty neighbours; a stream's superblock stays with the stream even when empty;
// - on failure: defragment (every stream arena gives all its superblocks back to the
//   global arena) and retry once.
// Deviations: the arena is taken at the first request, not at construction, and by default
// it is all free memory, as RMM's replay benchmark sizes it to the simulated device (RMM's
// own default, half the free memory, is arena_size=half); release_cached
// gives the whole arena back once nothing is live (RMM only in the destructor).
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <vector>

#include "policies/common/address_ranges.hpp"
#include "policies/common/size_bins.hpp"
#include "policies/common/upstream.hpp"
#include "sim/device.hpp"
#include "sim/policy.hpp"
#include "sim/spec.hpp"

namespace allocsim {

class RmmArenaPolicy final : public Policy {
 public:
  static constexpr std::array kParams{
      ParamInfo{"arena_size", ParamKind::text, "free",
                "bytes of the one upstream allocation; free = all free memory at the first "
                "request (the replay benchmark's -s); half = RMM's own default"},
      kUpstreamParam,
  };

  // What a spec sets, read once and checked without a device.
  struct Settings {
    enum class Size : std::uint8_t { bytes, free, half };  // of the device's free memory
    Size size;
    Bytes bytes;  // when size is bytes: a multiple of 256 B, at least 1 MiB
  };
  static Settings settings(const Params& params);  // throws Error naming a bad value

  RmmArenaPolicy(const Settings& settings, Device& device);
  ~RmmArenaPolicy() override;

  Allocation allocate(const Request& request) override;
  void deallocate(const Block& block, Nanos now) override;
  PolicyStats stats() const override;
  PolicyInspection inspect(Detail detail) const override;
  void release_cached() override;
  void check() const override;

 private:
  struct Superblock {
    Bytes size = 0;
    AddressRanges free;  // free blocks by address, flat; each leaf knows its largest
    void reset(Addr start, Bytes bytes);  // `bytes` from `start`, one free block
  };
  using Superblocks = std::map<Addr, Superblock>;  // by address

  std::optional<Addr> try_allocate(Bytes size, Stream stream);
  std::optional<Superblocks::node_type> global_first_fit(Bytes size);
  Addr take_first_fit(Superblock& superblock, Bytes size);
  void give_back(Superblock& superblock, Addr addr, Bytes size);
  void coalesce_global(Superblocks::node_type node);
  bool deallocate_from(Superblocks& set, Addr addr, Bytes size, bool global);
  void defragment();
  Superblocks::node_type new_superblock(Addr start, Bytes size);  // wholly free, from spare_ when it can
  void retire(Superblocks& set, Superblocks::iterator it);       // into spare_
  static bool empty(const Superblock& superblock) {
    return superblock.free.size() == 1 && superblock.free[superblock.free.begin()].size == superblock.size;
  }
  static bool fits(const Superblock& superblock, Bytes size);
  void note_free(Range block) { free_sizes_.insert({block.size, block.addr, 0}); }
  void forget_free(Range block) { free_sizes_.erase(block.size, block.addr); }

  Device& device_;
  bool whole_device_;  // arena_size=free: measured at the first request
  Bytes arena_size_;
  std::optional<Segment> upstream_;  // the arena, once taken
  Superblocks global_;
  std::map<Stream, Superblocks> arenas_;
  std::vector<Superblocks::node_type> spare_;  // retired superblocks, for new_superblock
  SizeBins free_sizes_;  // every free block of every superblock, by (size, address); handles unused
  Bytes allocated_ = 0;
  std::uint64_t defragments_ = 0;
};

}  // namespace allocsim
