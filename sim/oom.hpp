// Why a request could not be served. Defined once, used for every policy and tenant.
#pragma once

#include <cstdint>
#include <string_view>

#include "sim/policy.hpp"

namespace allocsim {

enum class OomKind : std::uint8_t { capacity, fragmentation, reservation };
constexpr int kOomKindCount = 3;
std::string_view name_of(OomKind kind);

// The device and the failing tenant at the moment of an OOM.
struct OomContext {
  Bytes request;           // requested bytes of the failing request
  Bytes live_requested;    // requested bytes alive in every tenant, before this request
  Bytes own_live_requested;  // the failing tenant's share of live_requested
  Bytes usable;            // device capacity less what was gone before any tenant started
  Bytes device_available;  // free on the device now
  PolicyStats policy;      // the failing tenant's policy now
  Bytes releasable;        // what its release_cached() would give back now
};

// capacity: the live bytes of all tenants plus this request exceed the usable device,
//   or this tenant's live bytes plus the request exceed its policy's own limit.
// reservation: the bytes exist but are held: by this policy's cache (what it could
//   release plus its headroom would serve the request) or by other tenants.
// fragmentation: this tenant's free bytes plus its headroom would serve the request, but
//   no free block is large enough.
// Headroom: the device's free bytes, capped by what the policy's own limit still allows.
OomKind classify_oom(const OomContext& context);

// What the failing policy could still have taken from the device.
Bytes oom_headroom(const OomContext& context);

}  // namespace allocsim
