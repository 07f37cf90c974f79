// Policy specs as `--policy` takes them: the list split, then each policy built from its
// spec on an idle device (policies/registry's check_policy_spec), so every policy's own
// parameter code reads the values. A bad spec must be an Error.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "policies/registry.hpp"
#include "sim/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    for (const std::string& item : allocsim::split_spec_list(text, "--policy")) {
      try {
        allocsim::check_policy_spec(item);
      } catch (const allocsim::Error&) {
      }
    }
  } catch (const allocsim::Error&) {
  }
  return 0;
}
