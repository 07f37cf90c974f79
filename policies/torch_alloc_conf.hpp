// PYTORCH_CUDA_ALLOC_CONF, read as PyTorch's allocator config reads it
// (c10/core/AllocatorConfig.cpp, c10/cuda/CUDAAllocatorConfig.cpp): the string a user
// sets, turned into the policy spec that models it, so that `--alloc-conf` speaks
// PyTorch's own words and lands on the same rows as `--policy`.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace allocsim {

// Entries between commas (not those inside a [...] list), each key:value; spaces ignored.
std::vector<std::pair<std::string, std::string>> alloc_conf_entries(std::string_view conf);

// A key PyTorch accepts that changes nothing a single-threaded replay of device memory
// allocates: the cudaMalloc lock, pinned host memory, the native backend named.
bool alloc_conf_key_without_effect(std::string_view key, std::string_view value);

// Whether `key` is one PyTorch's CUDA allocator config reads.
bool is_alloc_conf_key(std::string_view key);

struct AllocConfPolicy {
  std::string spec;  // `caching:...`, `expandable:...` or `torch-async:...`, checked
  std::vector<std::string> warnings;  // settings PyTorch accepts that have no effect here, and why
};

// The policy PYTORCH_CUDA_ALLOC_CONF=`conf` makes of PyTorch's allocator. Throws Error on
// a key PyTorch does not read, a key without ':', or a value PyTorch or the policy refuses.
AllocConfPolicy alloc_conf_policy(std::string_view conf);

}  // namespace allocsim
