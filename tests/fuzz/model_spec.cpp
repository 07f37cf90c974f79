// Model workload specs (workloads/model/model_spec): the token parse and its round-trip
// contract, parse_model_spec(to_string(s)) == s, and check_model_spec passing what parses.
// The model is not lowered (a large batch is a valid spec whose trace is large). A bad spec
// must be an Error; a broken contract aborts.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "sim/error.hpp"
#include "workloads/model/model_spec.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    const auto spec = allocsim::parse_model_spec(text);
    if (!spec) return 0;
    if (allocsim::parse_model_spec(allocsim::to_string(*spec)) != spec) std::abort();
    // What parses passes the check that specs edited in code get (sweeps, advise).
    try {
      allocsim::check_model_spec(*spec, text);
    } catch (const allocsim::Error&) {
      std::abort();
    }
  } catch (const allocsim::Error&) {
  }
  return 0;
}
