// rmm-binning: RAPIDS RMM's binning_memory_resource over fixed_size_memory_resource bins
// (rmm/mr/device/binning_memory_resource.hpp, fixed_size_memory_resource.hpp at HEAD
// 5d50a37b; ../shared/reference/allocators.md 4.4).
// - a bin of 2^i bytes for each i in [min_exp, max_exp]; a request goes to the smallest
//   bin at least its (raw) size, else to the upstream directly; a free routes the same way;
// - a bin takes chunks of `blocks` (128) blocks from the upstream and hands blocks out
//   FIFO: a free joins the back of its stream's list, a request takes the front of its
//   stream's list, else of another stream's, else a new chunk; chunks never go back while
//   the resource lives.
// Defaults: no bins (binning_memory_resource(upstream) and Python's BinningMemoryResource
// start without any), over an rmm-pool. RMM's replay benchmark uses min_exp=18, max_exp=22
// (256 KiB .. 4 MiB, 992 MiB of chunks) over its pool.
// Deviations: each bin takes its first chunk at its first request (RMM: at construction,
// the same memory earlier); release_cached gives back chunks with no block out, which RMM
// does only in the destructor.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "sim/device.hpp"
#include "sim/policy.hpp"
#include "sim/spec.hpp"

namespace allocsim {

class RmmBinningPolicy final : public Policy {
 public:
  static constexpr std::array kParams{
      ParamInfo{"min_exp", ParamKind::text, "none",
                "the smallest bin is 2^min_exp bytes; none = no bins (every request upstream)"},
      ParamInfo{"max_exp", ParamKind::text, "none", "the largest bin is 2^max_exp bytes"},
      ParamInfo{"blocks", ParamKind::count, "128",
                "blocks_to_preallocate: blocks in each chunk a bin takes from the upstream"},
      ParamInfo{"upstream", ParamKind::text, "rmm-pool",
                "the resource bins and large requests use: cuda (the device) or a policy "
                "spec in [...]"},
  };

  // What a spec sets, read once and checked without a device.
  struct Settings {
    Bytes blocks;  // per chunk
    std::optional<std::pair<std::uint64_t, std::uint64_t>> exponents;  // min_exp, max_exp; none: no bins
  };
  static Settings settings(const Params& params);  // throws Error naming a bad value

  RmmBinningPolicy(const Settings& settings, Device& device);
  ~RmmBinningPolicy() override;

  Allocation allocate(const Request& request) override;
  void deallocate(const Block& block, Nanos now) override;
  PolicyStats stats() const override;
  PolicyInspection inspect(Detail detail) const override;
  void release_cached() override;
  void check() const override;

 private:
  struct Bin {
    Bytes block_size;
    std::vector<Segment> chunks;
    std::map<Stream, std::deque<Addr>> free;  // FIFO per stream
    std::size_t out = 0;                      // blocks handed out
  };

  Bin* bin_for(Bytes requested);

  Device& device_;
  Bytes blocks_per_chunk_;
  std::vector<Bin> bins_;  // by block size
  Bytes reserved_ = 0;
  Bytes allocated_ = 0;
  Bytes direct_ = 0;  // bytes of live requests sent straight upstream
};

}  // namespace allocsim
