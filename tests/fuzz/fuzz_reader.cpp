// The libFuzzer target of one trace reader, compiled once per reader (CMakeLists.txt here):
// ALLOCSIM_FUZZ_HEADER names the reader's header, ALLOCSIM_FUZZ_PARSE its buffer entry,
// `parse_X(std::string_view text, const std::string& name)`. A bad input must be an Error;
// anything else that escapes (another exception, a sanitizer report) is a finding.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "sim/error.hpp"
#include ALLOCSIM_FUZZ_HEADER

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    static_cast<void>(allocsim::ALLOCSIM_FUZZ_PARSE(text, "fuzz-input"));
  } catch (const allocsim::Error&) {
  }
  return 0;
}
