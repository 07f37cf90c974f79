// The second half of the PyTorch snapshot reader: what it parses of convert_snapshot's
// output, the CSV trace and the JSON sidecar. An input is the two texts joined by a NUL
// byte (a seed is `csv \0 json`), so sidecars no pickle would produce are tried too; the
// whole path from the pickle's bytes is the pickle_snapshot target.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "sim/error.hpp"
#include "workloads/torch_recording.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const auto nul = input.find('\0');
  const std::string_view csv = input.substr(0, nul);
  const std::string_view sidecar = nul == std::string_view::npos ? std::string_view{} : input.substr(nul + 1);
  try {
    static_cast<void>(allocsim::parse_torch_recording(csv, sidecar, "fuzz.pickle"));
  } catch (const allocsim::Error&) {
  }
  return 0;
}
