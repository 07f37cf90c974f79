// rmm-pool: RAPIDS RMM's pool_memory_resource (rmm/mr/device/pool_memory_resource.hpp,
// detail/stream_ordered_memory_resource.hpp, detail/coalescing_free_list.hpp at HEAD
// 5d50a37b, checked against v23.10.00; ../shared/reference/allocators.md section 4.2).
// - sizes round up to 256 B; a free list per stream, sorted by address, coalescing with
//   contiguous neighbours but never across the start of an upstream block (a "head");
// - allocation: best fit (smallest, lowest address) in the stream's list; then best fit in
//   each other stream's list, in stream order (the remainder stays in that list); then each
//   other list merged into this one, retrying after each merge; then growth;
// - growth: without a maximum, max(request, pool size) (the pool at least doubles); with
//   one, max(request, half the room left) while it fits; halved towards the request while
//   the upstream refuses; the request takes the front of the new block;
// - nothing goes back upstream while the pool lives.
// Deviations: the initial pool is taken at the first request, not at construction (same
// memory, later); the default initial size is 0, as RMM's replay benchmark builds its pool
// without -s (C++ at HEAD requires one, Python takes half the free memory: initial=half);
// release_cached gives back each upstream block that is wholly free, which
// RMM does only in release() / the destructor.
#pragma once

#include <array>
#include <map>
#include <optional>
#include <vector>

#include "policies/common/free_list.hpp"
#include "policies/common/upstream.hpp"
#include "sim/device.hpp"
#include "sim/policy.hpp"
#include "sim/spec.hpp"

namespace allocsim {

class RmmPoolPolicy final : public Policy {
 public:
  static constexpr std::array kParams{
      ParamInfo{"initial", ParamKind::text, "0",
                "initial_pool_size, taken at the first request; 0 = RMM's replay benchmark without "
                "-s (grow by doubling); half = Python's default, percent_of_free_device_memory(50)"},
      ParamInfo{"maximum", ParamKind::text, "none", "maximum_pool_size; none = as much as the upstream gives"},
      kUpstreamParam,
  };

  // What a spec sets, read once and checked without a device.
  struct Settings {
    std::optional<Bytes> initial;  // none: half the device's free memory
    std::optional<Bytes> maximum;  // none: no maximum
  };
  static Settings settings(const Params& params);  // throws Error naming a bad value

  RmmPoolPolicy(const Settings& settings, Device& device);
  ~RmmPoolPolicy() override;

  Allocation allocate(const Request& request) override;
  void deallocate(const Block& block, Nanos now) override;
  PolicyStats stats() const override;
  PolicyInspection inspect(Detail detail) const override;
  void release_cached() override;
  void check() const override;

  // size_to_grow: what the pool asks its upstream for first when `bytes` does not fit.
  static Bytes size_to_grow(Bytes bytes, Bytes pool_size, std::optional<Bytes> maximum);

 private:
  // A stream's free list: by address, as RMM keeps it, and by (size, address), so that its
  // best fit (the smallest, the lowest address among equals) is one lookup, not a scan;
  // made on first use, never merged across the start of an upstream block (heads_).
  FreeList& list(Stream stream);
  // The new upstream block, in `stream`'s list; nullopt when the upstream refused.
  std::optional<Range> expand(Bytes try_bytes, Bytes min_bytes, Stream stream);
  Bytes largest_free() const;  // O(streams): stats() is read at every new peak

  Device& device_;
  Bytes initial_;
  std::optional<Bytes> maximum_;
  bool started_ = false;
  std::map<Stream, FreeList> lists_;   // by stream: RMM keys them by the stream's event
  std::map<Addr, Segment> upstream_;   // the upstream blocks, by address
  std::vector<Addr> heads_;            // their addresses, sorted: where no free block merges with the one before
  Bytes pool_size_ = 0;
  Bytes allocated_ = 0;
  std::uint64_t growths_ = 0;
  std::uint64_t stolen_ = 0;  // blocks taken from another stream's list
};

}  // namespace allocsim
