// --alloc-conf CONF, beside --policy in every command that takes one: PyTorch's allocator
// as PYTORCH_CUDA_ALLOC_CONF=CONF configures it, in PyTorch's own words
// (policies/torch_alloc_conf.hpp).
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include <boost/program_options.hpp>

namespace allocsim {

void add_alloc_conf_option(boost::program_options::options_description& description, std::string& conf);

// A command of one policy: `policy`, or the one `conf` makes when --policy is not given.
// Error when both are. Each setting without effect is a warning line on `out`.
std::string policy_or_alloc_conf(const std::string& policy, const std::string& conf, std::ostream& out);

// A command of a policy list: `conf`'s policy after the lists --policy gave.
void append_alloc_conf(std::vector<std::string>& policy_lists, const std::string& conf, std::ostream& out);

}  // namespace allocsim
