// --alloc-conf CONF, beside --policy in every command that takes one: PyTorch's allocator
// as PYTORCH_CUDA_ALLOC_CONF=CONF configures it, in PyTorch's own words
// (policies/torch_alloc_conf.hpp).
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include <boost/program_options.hpp>

#include "studies/alloc_conf_choice.hpp"

namespace allocsim {

void add_alloc_conf_option(boost::program_options::options_description& description, std::string& conf);

}  // namespace allocsim
