// Why a request could not be served. Defined once, used for every policy and tenant.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "sim/policy.hpp"

namespace allocsim {

enum class OomKind : std::uint8_t { capacity, fragmentation, reservation };
constexpr int kOomKindCount = 3;
std::string_view name_of(OomKind kind);

// An OOM answers two questions, and every output a person reads names each so
// (docs/outputs.md defines them): the run's verdict (classify_over_run: why the workload
// does not fit, judged against its live lower bound) and the kind at the request
// (classify_oom: why this one request failed when it came). The same three words answer
// both; a headline says the verdict, a request's account its own kind.
constexpr std::string_view kRunVerdict = "run verdict";
constexpr std::string_view kAtRequest = "at the request";

// What another running tenant holds at a moment.
struct TenantHolding {
  std::size_t tenant;
  Bytes reserved;  // from the device, by its policy
  Bytes live;      // requested bytes alive in it
};

// What the device gives one tenant at a moment, and who holds the rest. Defined once: the
// OOM classification and the verdict both read it.
struct TenantShare {
  Bytes capacity = 0;      // the device's total memory
  Bytes before_start = 0;  // gone before any tenant started (on a real GPU, its own context)
  Bytes contexts = 0;      // the CUDA contexts of every running tenant, this one's included
  std::vector<TenantHolding> others;  // every other running tenant

  Bytes others_reserved() const;
  Bytes others_live() const;
  // What this tenant's allocator can have, whatever its policy: the device less the
  // contexts and less what the other tenants hold now.
  Bytes gives() const;
  // The same were the other tenants to hold only their live bytes: a need beyond this
  // fits under no allocator and no setting of this tenant.
  Bytes could_give() const;
};

// The device and the failing tenant at the moment of an OOM.
struct OomContext {
  Bytes request;           // requested bytes of the failing request
  Bytes live_requested;    // requested bytes alive in every tenant, before this request
  Bytes own_live_requested;  // the failing tenant's share of live_requested
  Bytes usable;            // device capacity less what was gone before any tenant started
  Bytes device_available;  // free on the device now
  PolicyStats policy;      // the failing tenant's policy now
  Bytes releasable;        // what its release_cached() would give back now
  Bytes needs = 0;         // the tenant's live lower bound with its policy's rounding (0: not known)
  TenantShare share;       // usable == share.capacity - share.before_start - share.contexts
};

// capacity: the live bytes of all tenants plus this request exceed the usable device,
//   or this tenant's live bytes plus the request exceed its policy's own limit.
// reservation: the bytes exist but are held: by this policy's cache (what it could
//   release plus its headroom would serve the request) or by other tenants.
// fragmentation: this tenant's free bytes plus its headroom would serve the request, but
//   no free block is large enough.
// Headroom: the device's free bytes, capped by what the policy's own limit still allows.
OomKind classify_oom(const OomContext& context);

// The run's verdict: the OOM judged over the whole run rather than at the one request:
// capacity: the live bytes the trace needs (context.needs) exceed what the device could
//   give this tenant (TenantShare::could_give), whatever moment the request failed at;
// reservation: they fit the device, but not beside what the other tenants hold now
//   (TenantShare::gives), or not under this policy's own limit (memory_limit, fraction,
//   TensorFlow's reserve: policy.limit), or the request's own kind is reservation;
// otherwise the request's own kind (classify_oom). So fragmentation, the verdict that
// says another placement could fit the run, comes only when what the trace needs fits
// both what the device gives and the policy's limit.
OomKind classify_over_run(const OomContext& context);

// What the failing policy could still have taken from the device.
Bytes oom_headroom(const OomContext& context);

}  // namespace allocsim
