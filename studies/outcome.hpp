// Whether a tenant's run fits, and why not when it does not, said one way for every study
// (maxbatch, advise). Today the answer is the first OOM record (or the hang); a verdict
// over the whole run belongs here too, so that every study says the same.
#pragma once

#include <string>

#include "sim/result.hpp"

namespace allocsim {

// The whole trace ran: no OOM, no hang, every event replayed.
bool ran_through(const TenantResult& tenant);

// Why it did not, in a word: the first OOM's kind (capacity, fragmentation, reservation) or
// "the allocator would hang"; empty when it ran through.
std::string failure_kind(const TenantResult& tenant);

// Why it did not, for a person: the first OOM as describe_oom says it, or the hang; empty
// when it ran through.
std::string why_not(const TenantResult& tenant);

}  // namespace allocsim
