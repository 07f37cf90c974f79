// The policies of a replay from a recording as a test names them: each spec read as a
// command reads the one its user typed (parse_policy_spec).
#pragma once

#include <initializer_list>
#include <string_view>
#include <vector>

#include "policies/registry.hpp"
#include "studies/replay_from_recording.hpp"

namespace allocsim::test {

inline std::vector<RecordingPolicy> recording_policies(std::initializer_list<std::string_view> specs) {
  std::vector<RecordingPolicy> policies;
  for (const std::string_view spec : specs) policies.emplace_back(parse_policy_spec(spec));
  return policies;
}

}  // namespace allocsim::test
