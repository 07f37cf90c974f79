// The whole PyTorch snapshot path from a snapshot's bytes, a pickle's or JSON's (the reader
// tells them by their first byte): the plain-data unpickler or the JSON decoder, the
// reading into a trace and a recording (read_snapshot_recording). Seeds: small
// snapshots in protocols 2 to 5 and as JSON, heads of the shared recordings, and refused or
// hostile inputs (globals, REDUCE, a persistent id, a set, a list inside itself, deep
// nesting, a cut JSON).
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
