// Synthetic PyTorch memory snapshots for the replay-check tests: a few lines of Python that
// build `snapshot` from plain dicts and lists, pickled by the standard library (python3:
// Python's own pickler, what _dump_snapshot uses, so the reader meets real opcodes). No
// torch, no files outside a TempDir.
#pragma once

#include <cstdlib>
#include <string>

#include <catch2/catch.hpp>

#include "cli_driver.hpp"

namespace allocsim::test {

// Helpers the snippets may use: e(action, addr, size, stream=0, **extra) is a trace entry,
// b(size, state, **extra) a block, seg(address, total_size, blocks, **extra) a segment.
constexpr const char* kSnapshotPrelude = R"(import pickle, sys
def e(action, addr, size, stream=0, **extra):
    return dict(action=action, addr=addr, size=size, stream=stream, **extra)
def b(size, state, **extra):
    return dict(size=size, state=state, **extra)
def seg(address, total_size, blocks, stream=0, device=0, **extra):
    kind = "small" if total_size == 2 << 20 else "large"
    return dict(device=device, address=address, total_size=total_size, stream=stream, segment_type=kind,
                allocated_size=sum(x["size"] for x in blocks if x["state"] != "inactive"), blocks=blocks, **extra)
Pickler = pickle.Pickler
)";

// Runs `python` (after the prelude; it sets `snapshot`) and pickles `snapshot` into `name`
// inside `dir`; returns the path.
inline std::string write_snapshot(const TempDir& dir, const std::string& name, const std::string& python) {
  const std::string pickle = dir.file(name);
  const std::string script =
      dir.file(name + ".py", std::string(kSnapshotPrelude) + python +
                                 "\nwith open(sys.argv[1], 'wb') as out:\n    Pickler(out).dump(snapshot)\n");
  const std::string command = "python3 '" + script + "' '" + pickle + "'";
  REQUIRE(std::system(command.c_str()) == 0);
  return pickle;
}

// A fragmentation OOM: 40 MiB allocated in its own segment and freed, 4 MiB splits it, 40 MiB
// more fails with 30 MiB free on the device. The recorded run reserved 40 MiB at the most, in
// 1 segment, with 1 OOM, and could hold 40 + 30 = 70 MiB.
inline constexpr const char* kFragmentationOom = R"py(
M = 1 << 20
X = 0x7f0000000000
trace = [e("segment_alloc", X, 40 * M), e("alloc", X, 40 * M), e("free_requested", X, 40 * M),
         e("free_completed", X, 40 * M), e("alloc", X, 4 * M),
         {"action": "oom", "size": 40 * M, "device_free": 30 * M, "stream": 0}]
snapshot = {"segments": [seg(X, 40 * M, [b(4 * M, "active_allocated", address=X, requested_size=4 * M),
                                         b(36 * M, "inactive", address=X + 4 * M)])],
            "device_traces": [trace]}
)py";

}  // namespace allocsim::test
