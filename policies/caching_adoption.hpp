// The caching family's side of replaying a recording (policies/recording_adoption.hpp).
#pragma once

#include <memory>

#include "policies/recording_adoption.hpp"
#include "sim/policy.hpp"

namespace allocsim {

// A view over `policy` while it lives, or null when it is not of the caching family
// (caching, expandable). The registry's rows point to it.
std::unique_ptr<RecordingAdoption> caching_adoption(Policy& policy);

}  // namespace allocsim
