// A trace reader, one row of the catalogue's reader table (workloads/catalogue.cpp): our
// CSV, .atrace, PyTorch snapshots. Adding one is a file pair with a claims and a load function, a
// line in that table and its test.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string_view>

#include "sim/event_source.hpp"
#include "sim/framework.hpp"
#include "sim/trace.hpp"

namespace allocsim {

// How sure a reader is that a file is its own. Content beats name: a pickle named .csv
// goes to the snapshot reader; a CSV trace at a path without .csv to the CSV reader.
enum class Claim : std::uint8_t { no, by_name, by_content };

// What a reader may be told beside the path.
struct LoadOptions {
  std::optional<int> cuda_device;  // a PyTorch snapshot's device (none: the only one with a trace)
  int compute_capability = 90;     // of the device a model workload runs on (DeviceSpec's)
  // A load in the background (sim/background_trace.hpp): a reader that can tells it of the
  // events built as it goes (TraceBuilder::report_to); any other reader ignores it.
  TraceProgress* progress = nullptr;
};

// What a file holds beside its requests, where a command treats it apart.
enum class Holds : std::uint8_t {
  requests,        // a trace and nothing more
  allocator_state,  // a recording of the allocator's own state (a PyTorch snapshot): a replay can start from it
  failures,        // the requests the recorded allocator failed (an RMM log): a replay counts those it reproduces
};

struct ReaderInfo {
  std::string_view name;
  std::string_view summary;
  Framework framework;  // whose program writes the format; none: ours
  Holds holds;
  // `spec`: the path as written; `head`: the file's first bytes (empty when it cannot be read).
  Claim (*claims)(std::string_view spec, std::string_view head);
  Trace (*load)(const std::filesystem::path& path, const LoadOptions& options);
  // The file's events streamed into a replay without loading them; null when the format
  // must be read whole.
  std::shared_ptr<const EventSourceFactory> (*stream)(const std::filesystem::path& path);
};

// Bytes of a file's start the catalogue reads for claims().
constexpr std::size_t kReaderHeadBytes = 4096;

}  // namespace allocsim
