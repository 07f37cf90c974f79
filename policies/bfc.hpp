// bfc: TensorFlow's and JAX's GPU allocator, the best-fit-with-coalescing (BFC) allocator,
// byte for byte: the same reserved bytes (pool_bytes), in-use bytes (chunk sizes) and OOM
// points. Models xla/tsl/framework/bfc_allocator.cc (and its TF 2.x ancestors), with the
// limits of tensorflow/core/common_runtime/gpu/gpu_device.cc and xla/pjrt/gpu/gpu_helpers.cc.
// - requests round up to 256 B; the smallest free chunk that fits is used, the lowest
//   address among equals (what the scan of 21 size bins finds); it is split iff
//   S >= 2R or S - R >= 128 MiB (frag_fraction x limit when set), the low part used;
// - a freed chunk merges with free neighbours in its region; regions never merge;
// - memory comes as regions: one of the whole limit at the first request (preallocation),
//   or with growth 2 MiB doubling, bumped to fit a large request; a refused region backs
//   off by 0.9 in single precision (once per lifetime before 2024-02, repeatedly after,
//   with a progress guard after 2025-10); garbage collection frees wholly free regions
//   before giving up (TensorFlow on, JAX off);
// - where TensorFlow's code would loop forever (the growth target wrapping to 0 after 43
//   doublings; a tiny backpedal rounding back to itself) the policy reports a hang.
// Retry on failure (AllocatorRetry) waits up to 10 s for another thread to free memory;
// in a single-threaded replay nothing frees meanwhile, so the outcome is the same OOM and
// it is not modelled. Not modelled either: timestamped chunks, spatial partitioning, the
// VMM reservation mode. Addresses are the device's, not cudaMalloc's.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "policies/common/size_bins.hpp"
#include "policies/common/slots.hpp"
#include "sim/device.hpp"
#include "sim/policy.hpp"
#include "sim/spec.hpp"

namespace allocsim {

// Which of a rounded size's 21 bins (256 B << b) TensorFlow files it under.
std::size_t bfc_bin_for(Bytes rounded_bytes);
// One backpedal step without the progress guard: RoundedBytes(bytes * 0.9f), in float.
Bytes bfc_backpedal(Bytes bytes);
// TensorFlow's MinSystemMemory: what it leaves to the system on a GPU.
Bytes tf_min_system_memory(Bytes available, int cc_major);

constexpr std::array<ParamInfo, 7> bfc_params(std::string_view growth, std::string_view fraction,
                                              std::string_view gc) {
  return {{
      {"growth", ParamKind::boolean, growth,
       "allow_growth (set_memory_growth): regions from 2 MiB doubling instead of one of the whole limit"},
      {"limit", ParamKind::text, "auto",
       "a virtual device's memory_limit, exact, with a unit (4GiB); auto = the framework's rule below",
       "memory_limit_mb", "MiB"},
      {"fraction", ParamKind::number, fraction,
       "per_process_gpu_memory_fraction (TF) or XLA_PYTHON_CLIENT_MEM_FRACTION (JAX), of total "
       "memory; 0 = TensorFlow's default: free memory at start minus reserve"},
      {"reserve", ParamKind::text, "auto",
       "limit = free memory at start minus this, applied last and "
       "only if it fits; auto = TensorFlow's MinSystemMemory (225 MiB to 1800 MiB by free "
       "memory and compute capability) when fraction is 0", "gpu_system_memory_size_in_mb", "MiB"},
      {"gc", ParamKind::boolean, gc,
       "free wholly free regions and grow again before an OOM (TF_ENABLE_GPU_GARBAGE_COLLECTION)"},
      {"frag_fraction", ParamKind::number, "0",
       "internal_fragmentation_fraction: split when the excess >= this x limit; 0 = 128 MiB"},
      {"version", ParamKind::text, "2025-10",
       "backpedal when the device refuses a region: 2023 (once per allocator lifetime), "
       "2024-02 (every time), 2025-10 (every time, with a progress guard)"},
  }};
}

class BfcPolicy final : public Policy {
 public:
  // The most the pool may reserve, and the rule that set it.
  struct Limit {
    Bytes bytes;
    LimitKind kind;
    Bytes withheld;  // system_reserve: the reserve left on the device
  };

  static constexpr auto kTensorFlowParams = bfc_params("false", "0", "true");
  static constexpr auto kGrowthParams = bfc_params("true", "0", "true");
  static constexpr auto kJaxParams = bfc_params("false", "0.75", "false");
  static constexpr auto kJaxGrowthParams = bfc_params("true", "0.75", "false");

  enum class Version : std::uint8_t { v2023, v2024_02, v2025_10 };

  // What a spec sets, read once and checked without a device.
  struct Settings {
    bool growth;
    std::optional<Bytes> limit;    // memory_limit; none: auto, the framework's rule
    double fraction;
    std::optional<Bytes> reserve;  // none: auto
    bool gc;
    double frag_fraction;
    Version version;
  };
  static Settings settings(const Params& params);  // throws Error naming a bad value
  // Within its one region BFC breaks ties by address; between regions only once it grows them.
  static SegmentTraits segment_traits(const Settings& settings) { return {.places_by_address = settings.growth}; }

  BfcPolicy(const Settings& settings, Device& device);
  ~BfcPolicy() override;

  Allocation allocate(const Request& request) override;
  void deallocate(const Block& block, Nanos now) override;
  PolicyStats stats() const override;
  void release_cached() override;
  void check() const override;
  PolicyInspection inspect(Detail detail) const override;
  void prepare(const ReplaySetup& setup) override;
  Bytes rounded_size(Bytes requested) const override;

 private:
  std::vector<PolicyStat> extra_stats() const;
  std::string describe_state() const;

  static constexpr std::uint32_t kNone = kNoNeighbour;
  static constexpr std::size_t kBins = 21;

  struct Chunk {
    Addr ptr;
    Bytes size;
    Bytes requested;
    std::uint32_t prev;  // physical neighbours in the same region, kNone at its ends
    std::uint32_t next;
    std::uint32_t region;  // its index in regions_, so that touch() finds it at once
    bool in_use;
  };
  struct Region {
    Segment segment;
    std::uint32_t first_chunk;
    Addr touched_end;  // the end of the highest block ever carved from it
  };
  // TensorFlow's bins are power-of-two size classes, each ordered by (size, address), and
  // FindChunkPtr takes the first chunk large enough from the request's bin up: the first
  // in the (size, address) order of all free chunks. SizeBins keeps that order in finer
  // bins (32 per power of two), so each one stays a few entries long.
  using Fit = SizeBins::Cursor;
  std::optional<Fit> find_chunk(Bytes rounded) const;
  std::uint32_t use_chunk(Fit fit, Bytes rounded, const Request& request);  // returns the chunk
  bool extend(Bytes rounded);
  bool deallocate_free_regions(Bytes rounded);
  void free_regions_wholly_free();
  bool wholly_free(const Region& region) const;
  void merge(std::uint32_t left, std::uint32_t right);  // right is left's next neighbour
  void insert_into_bin(std::uint32_t chunk);
  void remove_from_bin(std::uint32_t chunk);
  void touch(const Chunk& chunk);  // a block is carved from the chunk's region up to its end

  Device& device_;
  Limit limit_rule_;
  Bytes limit_;
  bool growth_;
  bool gc_;
  Bytes max_internal_fragmentation_;
  Version version_;
  std::uint64_t region_target_;  // curr_region_allocation_bytes_: wraps as TensorFlow's does
  bool started_backpedal_ = false;
  std::string hang_;

  Slots<Chunk> chunks_;
  std::vector<Region> regions_;
  SizeBins free_chunks_;                 // every chunk not in use; handles are chunks
  std::vector<std::uint32_t> chunk_of_;  // by AllocId: the chunk a live block is

  std::uint64_t num_allocs_ = 0;
  Bytes bytes_in_use_ = 0;
  Bytes never_touched_ = 0;  // of pool_bytes_: past every region's touched_end
  Bytes peak_bytes_in_use_ = 0;
  Bytes largest_alloc_size_ = 0;
  Bytes pool_bytes_ = 0;
  Bytes peak_pool_bytes_ = 0;
};

}  // namespace allocsim
