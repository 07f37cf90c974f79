#include "studies/alloc_conf_choice.hpp"

#include <utility>

#include "policies/torch_alloc_conf.hpp"
#include "sim/error.hpp"

namespace allocsim {

std::optional<PolicySpec> alloc_conf_spec(const std::string& conf, std::ostream& out) {
  if (conf.empty()) return std::nullopt;
  AllocConfPolicy made = alloc_conf_policy(conf);
  for (const std::string& warning : made.warnings) out << "warning: " << warning << '\n';
  return std::move(made.policy);
}

std::optional<PolicySpec> alloc_conf_instead(const std::string& policy, const std::string& conf, std::ostream& out) {
  if (!conf.empty() && !policy.empty()) {
    throw Error("give --policy or --alloc-conf, not both: --alloc-conf is PyTorch's allocator so configured");
  }
  return alloc_conf_spec(conf, out);
}

std::optional<PolicySpec> policy_or_alloc_conf(const std::string& policy, const std::string& conf, std::ostream& out) {
  if (std::optional<PolicySpec> made = alloc_conf_instead(policy, conf, out)) return made;
  return policy.empty() ? std::nullopt : std::optional(parse_policy_spec(policy));
}

void append_alloc_conf(std::vector<std::string>& policy_lists, std::vector<PolicyMaker>& given, const std::string& conf,
                       std::ostream& out) {
  const std::optional<PolicySpec> policy = alloc_conf_spec(conf, out);
  if (!policy) return;
  policy_lists.push_back(policy->text);
  given.push_back(policy->maker());
}

}  // namespace allocsim
