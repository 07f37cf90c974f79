// A tenant's outcome as a user acts on it: does the run fit, what it needs against what
// the device gives this process, and what holds the rest. A value (studies rank by it),
// worded by describe_verdict for the table.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sim/result.hpp"

namespace allocsim {

enum class HolderKind : std::uint8_t {
  other_tenant,    // another process on the device, by its policy's reserve
  own_cache,       // this policy's cache: what empty_cache() would free
  system_reserve,  // TensorFlow's MinSystemMemory (or gpu_system_memory_size_in_mb) reserve
  memory_limit,    // this policy's memory_limit
  fraction,        // this policy's per-process memory fraction
  contexts,        // the CUDA contexts of the running processes, this one's included
};
std::string_view name_of(HolderKind kind);

struct Holder {
  HolderKind kind;
  Bytes bytes;
  std::size_t tenant = 0;  // other_tenant: which
};

struct Verdict {
  std::size_t tenant = 0;
  bool fits = true;                     // every request served, no hang
  bool hang = false;                    // the real allocator would have looped forever
  std::optional<OomKind> kind;          // the run verdict: why it does not fit, over the whole run
  std::optional<OomKind> request_kind;  // detail: the first failing request's kind at the request
  bool context_failed = false;          // the process could not even create its context
  std::size_t oom_event = 0;            // the first OOM (or the hang): where, how much
  Bytes oom_bytes = 0;
  Bytes needs = 0;           // live bytes the trace needs at least (with the policy's rounding when it failed)
  Bytes gives = 0;           // what the device gives this process: at the first OOM, else alone on it
  Bytes could_give = 0;      // the same were the other tenants to hold only their live bytes
  Bytes capacity = 0;        // the device's total memory
  Bytes peak_allocated = 0;
  Bytes peak_reserved = 0;
  Bytes reserved_unused = 0; // of the reserve at the allocated peak: free (cached or never touched)
  Bytes never_touched = 0;
  Bytes planned_reserve = 0; // an offline planner's arena for the whole trace (optimal)
  std::optional<std::size_t> peak_step;  // the training step the peak is in, when the trace has steps
  std::vector<Holder> holders;           // what held the rest, largest first
};

Verdict verdict_of(const RunResult& run, const TenantResult& tenant);

// What held the bytes the failing tenant of `context` could not have, largest first.
std::vector<Holder> holders_at(const OomContext& context);

// "fits", "capacity", "fragmentation", "reservation" or "hang": the run verdict in a word,
// the CSV's verdict column.
std::string_view verdict_word(const Verdict& verdict);

// Every OOM of `tenant` counted by its kind at the request, the first OOM's kind first:
// "fragmentation (237), capacity (2)"; "none" without an OOM.
std::string describe_request_kinds(const TenantResult& tenant);

// "tenant 0 does not fit (capacity): needs at least 16.3 GiB live; the device gives this
// process 15.3 GiB (...); no allocator fits this", then lines of detail, each ending in '\n'.
std::string describe_verdict(const Verdict& verdict, std::string_view device_name);

// "tenant 0 14.2 GiB; cache 300 MiB": the holders, for a person.
std::string describe_holders(const std::vector<Holder>& holders);

}  // namespace allocsim
