// A study's --alloc-conf CONF (the Python keyword alloc_conf): PyTorch's allocator as
// PYTORCH_CUDA_ALLOC_CONF=CONF configures it, in PyTorch's own words
// (policies/torch_alloc_conf.hpp), as a policy spec beside or instead of --policy.
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace allocsim {

// A study of one policy: `policy`, or the one `conf` makes when --policy is not given.
// Error when both are. Each setting without effect is a warning line on `out`.
std::string policy_or_alloc_conf(const std::string& policy, const std::string& conf, std::ostream& out);

// A study of a policy list: `conf`'s policy after the lists --policy gave.
void append_alloc_conf(std::vector<std::string>& policy_lists, const std::string& conf, std::ostream& out);

}  // namespace allocsim
