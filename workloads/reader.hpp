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

struct ReaderInfo {
  std::string_view name;
  std::string_view summary;
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
