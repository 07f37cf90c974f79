// PYTORCH_CUDA_ALLOC_CONF, read as PyTorch's allocator config reads it
// (c10/core/AllocatorConfig.cpp, c10/cuda/CUDAAllocatorConfig.cpp), both ways, from one
// table of its keys: the string a user sets turned into the policy spec that models it (so
// that `--alloc-conf` speaks PyTorch's own words and lands on the same rows as `--policy`),
// and a spec of PyTorch's allocator turned back into what a user sets (the advice, replay's
// best setting, the page). A key that sets a parameter of `caching` is that parameter's own
// `native` spelling in its registry row.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "policies/registry.hpp"
#include "sim/spec.hpp"

namespace allocsim {

// Entries between commas (not those inside a [...] list), each key:value; spaces ignored.
std::vector<std::pair<std::string, std::string>> alloc_conf_entries(std::string_view conf);

// Whether `key` is one PyTorch's CUDA allocator config reads.
bool is_alloc_conf_key(std::string_view key);

// The PYTORCH_CUDA_ALLOC_CONF key that sets `parameter` of `caching` (max_split_size ->
// max_split_size_mb), or empty when no key does.
std::string_view alloc_conf_key(std::string_view parameter);

// What one entry KEY:VALUE of PYTORCH_CUDA_ALLOC_CONF sets, read and checked as PyTorch
// reads it.
struct AllocConfSetting {
  enum class Kind : std::uint8_t {
    parameter,  // `name` of caching, to `value` in that parameter's spelling (max_split_size_mb:128: max_split_size, 128MiB)
    policy,     // the policy `name`: expandable (expandable_segments:True), torch-async
                // (backend:cudaMallocAsync), caching (expandable_segments:False)
    nothing,    // nothing a single-threaded replay of device memory allocates
  };
  Kind kind;
  std::string name;
  std::string value;
  bool native_only;  // read by the native allocator only: cudaMallocAsync ignores it
};

// Throws Error "ORIGIN: 'KEY' is not a key of PYTORCH_CUDA_ALLOC_CONF; ...", "ORIGIN: 'KEY'
// has no value; ..." or "ORIGIN KEY:VALUE: PyTorch takes ..." where PyTorch would refuse it.
AllocConfSetting read_alloc_conf_entry(const std::string& key, const std::string& value, std::string_view origin);

struct AllocConfPolicy {
  PolicySpec policy;  // `caching:...`, `expandable:...` or `torch-async:...`, read and checked
  std::vector<std::string> warnings;  // settings PyTorch accepts that have no effect here, and why
};

// The policy PYTORCH_CUDA_ALLOC_CONF=`conf` makes of PyTorch's allocator. Throws Error on
// a key PyTorch does not read, a key without ':', or a value PyTorch or the policy refuses.
AllocConfPolicy alloc_conf_policy(std::string_view conf);

// The PYTORCH_CUDA_ALLOC_CONF=... line that makes PyTorch's allocator the policy `spec`
// names (caching, expandable, torch-async, with their keys): `recorded` (the program's own
// setting, may be empty) with each key the spec sets replaced and its other entries kept.
// None for another policy, or a key with no PyTorch spelling (a memory fraction is set
// from Python: see torch_setting).
std::optional<std::string> alloc_conf_line(const Spec& spec, std::string_view recorded);

// What a user sets in PyTorch for `spec`, for a person: the ALLOC_CONF line, and the Python
// call for a memory fraction; plain `caching` keeps the recorded setting; a policy that is
// not PyTorch's is named in a comment line.
std::string torch_setting(const Spec& spec, std::string_view recorded);

}  // namespace allocsim
