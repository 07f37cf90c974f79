// The PyTorch snapshot reading alone, from the snapshot's dict written as JSON text
// (decode_snapshot_json, then read_snapshot_recording): text a fuzzer mutates into dicts
// that no pickle it would find holds (a float or a negative number where an address goes,
// settings of the wrong type). The whole path from a pickle's bytes is the pickle_snapshot
// target. Seeds: small snapshots as json.dump writes them.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "sim/error.hpp"
#include "workloads/snapshot_conversion.hpp"
#include "workloads/snapshot_json.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  try {
    const allocsim::PickleGraph snapshot = allocsim::decode_snapshot_json(input, "fuzz.json");
    static_cast<void>(allocsim::read_snapshot_recording(snapshot.root(), "fuzz.json"));
  } catch (const allocsim::Error&) {
  }
  return 0;
}
