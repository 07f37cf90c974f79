// TensorFlow's and XLA's BFC allocator OOM log (BFCAllocator::DumpMemoryLog in
// tensorflow/core/common_runtime/bfc_allocator.cc, later tsl/ and xla/tsl/framework/), read
// from a pasted text with or without each line's log prefix (../shared/reference/oom_messages.md):
// - `Allocator (GPU_0_bfc) ran out of memory trying to allocate 1.00GiB (rounded to
//   1073741824)`, wrapped anywhere; the `freed_by_count=` warning variant is no OOM;
// - `Bin (256): Total Chunks: n, Chunks in use: m. X allocated for chunks. Y in use in bin.`;
// - `Next region of size N`, then every chunk in address order in each version's form:
//   `Chunk at 0x.. of size N` (TF 1.x, in use), `InUse at 0x.. next K of size N`,
//   `InUse at 7f.. of size N next K`, `Free  at ...` the same;
// - `N Chunks of size S totalling X`, `Sum Total of in-use chunks: X`;
// - `total_region_allocated_bytes_: N memory_limit_: M available bytes: ...` or `Total bytes
//   in pool: N memory_limit_: M ...`;
// - `Stats:` then `Limit:`, `InUse:`, `MaxInUse:`, `NumAllocs:`, `MaxAllocSize:`,
//   `Reserved:`, `PeakReserved:`, `LargestFreeBlock:`;
// - the op's error `OOM when allocating tensor with shape[64,3,512,512] and type half ...`,
//   whose bytes are the shape's product times the type's size;
// - the driver's `failed to allocate 10.50G (11274289152 bytes) from device:
//   CUDA_ERROR_OUT_OF_MEMORY` (stream_executor's cuda_driver.cc): the device refused a region,
//   each line as BFC backs off by a tenth, with or without the summary after them.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "studies/pasted_text.hpp"

namespace allocsim {

struct BfcChunk {
  Addr addr = 0;
  Bytes size = 0;
  bool in_use = false;
};

struct BfcRegion {
  std::optional<Bytes> size;     // `Next region of size N`; none in the oldest logs
  std::vector<BfcChunk> chunks;  // in address order
};

struct BfcBin {
  Bytes bin_size = 0;
  std::size_t chunks = 0;
  std::size_t in_use = 0;
  std::optional<PrintedSize> allocated_for_chunks;
  std::optional<PrintedSize> in_use_in_bin;
};

struct BfcOomLog {
  std::string allocator;               // GPU_0_bfc
  std::optional<PrintedSize> request;  // exact when the log gives `rounded to`
  bool warning_only = false;           // only the `freed_by_count` warning: no OOM
  std::vector<BfcBin> bins;
  std::vector<BfcRegion> regions;      // the chunk dump
  std::optional<Bytes> summary_in_use;           // the `N Chunks of size S` lines, summed
  std::optional<PrintedSize> sum_total_in_use;   // `Sum Total of in-use chunks`
  std::optional<Bytes> pool;                     // total_region_allocated_bytes_ / Total bytes in pool
  std::optional<Bytes> memory_limit;             // memory_limit_
  std::optional<Bytes> stats_limit;              // Stats: Limit
  std::optional<Bytes> stats_in_use;             // Stats: InUse
  std::optional<Bytes> stats_reserved;           // Stats: Reserved
  std::optional<Bytes> stats_largest_free;       // Stats: LargestFreeBlock
  std::string op_error;                          // `OOM when allocating tensor ...`
  std::optional<Bytes> tensor_bytes;             // the op's tensor: shape product x type size
  std::string tensor;                            // "shape[64,3,512,512] and type half"
  std::vector<Bytes> device_refused;             // the driver's `failed to allocate` figures

  bool has_chunks() const;
};

// The bytes of one element of a TensorFlow dtype as its errors name it (`float`, `half`,
// `bfloat16`, `int64`, ...); nothing for a name it does not know.
std::optional<Bytes> tf_type_size(std::string_view name);

// Nothing when the text holds no BFC OOM line, no chunk dump, no Stats block, no op error
// and no driver refusal.
std::optional<BfcOomLog> read_bfc_oom_log(std::string_view text);

}  // namespace allocsim
