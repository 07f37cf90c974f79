// Whether a tenant's run fits, and why not when it does not, said one way for every study
// (maxbatch, advise), from the run's verdict (sim/verdict), so that every study says the
// same as `allocsim run`.
#pragma once

#include <string>

#include "sim/result.hpp"

namespace allocsim {

// The whole trace ran: no OOM, no hang, every event replayed.
bool ran_through(const TenantResult& tenant);

// Why it did not, in a word: the first OOM's kind (capacity, fragmentation, reservation) or
// "the allocator would hang"; empty when it ran through.
std::string failure_kind(const TenantResult& tenant);

// Why it did not, for a person: the verdict's first line ("tenant 0 does not fit
// (capacity): needs at least ...; the device ... gives this process ...; ..."); empty when
// it ran through.
std::string why_not(const RunResult& run, const TenantResult& tenant);

}  // namespace allocsim
