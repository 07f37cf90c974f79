// A study's --alloc-conf CONF (the Python keyword alloc_conf): PyTorch's allocator as
// PYTORCH_CUDA_ALLOC_CONF=CONF configures it, in PyTorch's own words
// (policies/torch_alloc_conf.hpp), as a policy spec beside or instead of --policy.
#pragma once

#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "policies/registry.hpp"

namespace allocsim {

// A study of one policy: `policy` read, or the one `conf` makes when --policy is not given;
// none when neither is. Error when both are, or naming the bad one. Each setting without
// effect is a warning line on `out`.
std::optional<PolicySpec> policy_or_alloc_conf(const std::string& policy, const std::string& conf, std::ostream& out);
// Its first half, for a command that checks what else it was given before it reads --policy:
// the policy `conf` makes, read; none without a conf. Error when both are given.
std::optional<PolicySpec> alloc_conf_instead(const std::string& policy, const std::string& conf, std::ostream& out);

// The policy `conf` makes, read; none for an empty conf. Warnings as above.
std::optional<PolicySpec> alloc_conf_spec(const std::string& conf, std::ostream& out);

// A study of policy lists: `conf`'s policy after the lists --policy gave, its text the last
// item and its maker among `given` (the policies made in code that the study takes as they
// are, policy_makers), so that the study does not read its text again.
void append_alloc_conf(std::vector<std::string>& policy_lists, std::vector<PolicyMaker>& given, const std::string& conf,
                       std::ostream& out);

}  // namespace allocsim
