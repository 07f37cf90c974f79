// Policy specs as `--policy` takes them: the list split, each item read and checked by its
// row (policies/registry's parse_policy_spec). A bad spec must be an Error, and a spec the
// check accepts must build on an idle device: the check and the constructor agree, so an
// Error from the build is a crash here, as is one from reading the spec again from its Spec.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "policies/registry.hpp"
#include "sim/error.hpp"
#include "sim/sim_device.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  std::vector<std::string> items;
  try {
    items = allocsim::split_spec_list(text, "--policy");
  } catch (const allocsim::Error&) {
    return 0;
  }
  for (const std::string& item : items) {
    std::optional<allocsim::PolicySpec> spec;
    try {
      spec = allocsim::parse_policy_spec(item);
    } catch (const allocsim::Error&) {
      continue;
    }
    allocsim::SimDevice idle{allocsim::DeviceSpec{}};
    spec->make(idle);
    // Read again from its Spec, as a study reads the specs it derives (advise): the same row.
    try {
      if (allocsim::policy_spec(spec->spec).row != spec->row) std::abort();
    } catch (const allocsim::Error&) {
      std::abort();
    }
  }
  return 0;
}
