#include "app/alloc_conf_option.hpp"

#include "policies/torch_alloc_conf.hpp"
#include "sim/error.hpp"

namespace allocsim {
namespace {

std::string spec_of(const std::string& conf, std::ostream& out) {
  const AllocConfPolicy made = alloc_conf_policy(conf);
  for (const std::string& warning : made.warnings) out << "warning: " << warning << '\n';
  return made.spec;
}

}  // namespace

void add_alloc_conf_option(boost::program_options::options_description& description, std::string& conf) {
  description.add_options()(
      "alloc-conf", boost::program_options::value(&conf)->value_name("CONF"),
      "PyTorch's allocator as PYTORCH_CUDA_ALLOC_CONF=CONF sets it, in its spelling: "
      "'expandable_segments:True,max_split_size_mb:128,garbage_collection_threshold:0.8,per_process_memory_fraction:0.9'");
}

std::string policy_or_alloc_conf(const std::string& policy, const std::string& conf, std::ostream& out) {
  if (conf.empty()) return policy;
  if (!policy.empty()) {
    throw Error("give --policy or --alloc-conf, not both: --alloc-conf is PyTorch's allocator so configured");
  }
  return spec_of(conf, out);
}

void append_alloc_conf(std::vector<std::string>& policy_lists, const std::string& conf, std::ostream& out) {
  if (!conf.empty()) policy_lists.push_back(spec_of(conf, out));
}

}  // namespace allocsim
