// The plain replay loop compiled for one policy type. The policy registry instantiates it
// for each row's type, so that a policy's own files never see the engine: a new policy is
// its header, its source and one registry row.
#pragma once

#include <type_traits>

#include "sim/made_policy.hpp"
#include "sim/tenant_replay.hpp"

namespace allocsim {

// A DirectLoop for policies of type P: allocate and deallocate are direct calls the
// compiler may inline, and the virtual dispatch is once per run.
template <typename P>
void direct_loop(Policy& policy, const PlainReplay& replay) {
  static_assert(std::is_final_v<P>, "the loop calls P's allocate directly only when P is final");
  replay.run(static_cast<P&>(policy));
}

}  // namespace allocsim
