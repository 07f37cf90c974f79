#include "policies/registry.hpp"

#include <array>
#include <string>

#include "policies/bestfit.hpp"
#include "policies/direct.hpp"
#include "sim/error.hpp"

namespace allocsim {
namespace {

template <typename P>
std::unique_ptr<Policy> make(const Params& params, Device& device) {
  return std::make_unique<P>(params, device);
}

const std::array kPolicies{
    PolicyInfo{"direct", "", "cudaMalloc/cudaFree per request: TensorFlow's cuda_malloc, JAX's platform, "
               "PyTorch with PYTORCH_NO_CUDA_MEMORY_CACHING=1",
               "every request is its own device allocation, rounded to the device granularity",
               DirectPolicy::kParams, make<DirectPolicy>},
    PolicyInfo{"bestfit", "", "textbook best fit with coalescing (the placement inside TensorFlow's BFC, "
               "without bins)",
               "one region of all free device memory, address-ordered best fit, free neighbours merged",
               BestFitPolicy::kParams, make<BestFitPolicy>},
};

}  // namespace

std::span<const PolicyInfo> all_policies() { return kPolicies; }

const PolicyInfo& find_policy(std::string_view name) {
  for (const PolicyInfo& info : kPolicies) {
    if (info.name == name || (!info.alias.empty() && info.alias == name)) return info;
  }
  std::string valid;
  for (const PolicyInfo& info : kPolicies) valid += (valid.empty() ? "" : ", ") + std::string(info.name);
  throw Error("unknown policy '" + std::string(name) + "'; valid policies: " + valid);
}

std::unique_ptr<Policy> make_policy(std::string_view spec_text, Device& device) {
  const Spec spec = parse_spec(spec_text);
  const PolicyInfo& info = find_policy(spec.name);
  return info.make(Params(spec, info.params, "policy " + std::string(info.name)), device);
}

}  // namespace allocsim
