// The whole PyTorch snapshot path from a pickle's bytes: the plain-data unpickler, the
// conversion to our CSV trace and sidecar, and their parse into a recording. Seeds: small
// snapshots in protocols 2 to 5, heads of the shared recordings, and refused or hostile
// pickles (globals, REDUCE, a persistent id, a set, a list inside itself, deep nesting).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "sim/error.hpp"
#include "workloads/torch_recording.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  try {
    static_cast<void>(allocsim::read_torch_recording_bytes(input, "fuzz.pickle"));
  } catch (const allocsim::Error&) {
  }
  return 0;
}
