// TensorFlow's memory log (TF_CPP_VMODULE=log_memory=2, ../shared/reference/formats.md
// section 4) as a workload: the lines `__LOG_MEMORY__ TYPE { PROTO }` that
// tensorflow/core/framework/log_memory.cc writes (the proto in text format, one line),
// anywhere in a log that holds other lines too. Read:
// - MemoryLogTensorAllocation (tensor.allocation_description: requested_bytes,
//   allocator_name, allocation_id; kernel_name is the allocation's layer) and
//   MemoryLogRawAllocation (num_bytes, allocator_name, allocation_id; operation the layer):
//   allocations;
// - MemoryLogTensorDeallocation and MemoryLogRawDeallocation (allocator_name,
//   allocation_id): frees, paired by allocation id within the allocator;
// - MemoryLogStep: a step begins (the next allocation or free is its first event);
// - MemoryLogTensorOutput (an existing tensor handed on): no request, left out.
// Kept: the allocator of one GPU (`GPU_N_bfc`, or any `GPU_N_...`): LoadOptions::cuda_device
// N, else the only GPU allocator in the log. Only allocators that track sizes (BFC) number
// their allocations; an allocation id 0 (proto3 leaves a 0 out: a missing id) is refused.
// What the format lacks, and what is assumed instead:
// - time: only the line's prefix (TensorFlow's `YYYY-MM-DD HH:MM:SS.uuuuuu: I ...` or glog's
//   `IMMDD HH:MM:SS.uuuuuu ...`), counted from the first; a line without one takes the time
//   of the line before;
// - streams: none (TensorFlow's BFC allocator has one per device): stream 0; tags: `other`;
// - a free of an id the log never allocated (made before logging, or by a path that logs
//   no allocation) is left out and counted; an allocation logged twice while live (the same
//   id and size) is one allocation, counted.
#pragma once

#include <cstddef>
#include <filesystem>
#include <istream>
#include <optional>
#include <string>
#include <string_view>

#include "sim/trace.hpp"
#include "workloads/reader.hpp"

namespace allocsim {

struct TfMemoryLog {
  Trace trace;
  std::string allocator;             // e.g. GPU_0_bfc
  std::size_t unmatched_frees = 0;   // frees of ids the log never allocated, left out
  std::size_t repeated_allocations = 0;
  std::size_t other_allocators = 0;  // records of other allocators (the CPU's, other GPUs'), left out
};

// Throws Error "NAME:LINE: what" on the first bad record.
TfMemoryLog read_tf_memory_log(std::istream& in, const std::string& name, std::optional<int> cuda_device = {});
TfMemoryLog parse_tf_memory_log(std::string_view text, const std::string& name, std::optional<int> cuda_device = {});
TfMemoryLog read_tf_memory_log_file(const std::filesystem::path& path, std::optional<int> cuda_device = {});

// By content: the file's first bytes hold a `__LOG_MEMORY__` line; by name: a path ending in
// .log (TensorFlow's start-up lines can fill the first bytes read).
Claim claims_tf_memory_log(std::string_view spec, std::string_view head);

}  // namespace allocsim
