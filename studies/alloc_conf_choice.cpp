#include "studies/alloc_conf_choice.hpp"

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
