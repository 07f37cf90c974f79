// The libFuzzer target of our CSV reader, read three ways: whole (parse_csv_trace), as a
// stream (csv_trace_stream, read back whole) and from a file (read_csv_trace_file, which
// parses the file's mapping). A bad input must be the same Error from all; a good one the same trace. Anything
// else (a difference, another exception, a sanitizer report) is a finding.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "sim/error.hpp"
#include "sim/event_source.hpp"
#include "workloads/csv_trace.hpp"

namespace {

bool same(const allocsim::Trace& a, const allocsim::Trace& b) {
  if (a.events.size() != b.events.size() || a.requested != b.requested || a.live_lower_bound != b.live_lower_bound) {
    return false;
  }
  for (std::size_t i = 0; i < a.events.size(); ++i) {
    const allocsim::Event& x = a.events[i];
    const allocsim::Event& y = b.events[i];
    if (x.time != y.time || x.id != y.id || x.stream != y.stream || x.op != y.op || x.tag != y.tag) return false;
  }
  return true;
}

// Where each input is written to be read as a file: one path per process, removed at its
// exit; the other reads name the input by it too, so that all errors read alike.
struct InputFile {
  std::string path =
      (std::filesystem::temp_directory_path() / ("allocsim-fuzz-csv-" + std::to_string(::getpid()))).string();
  ~InputFile() { std::filesystem::remove(path); }
};

const std::string& input_path() {
  static const InputFile file;
  return file.path;
}

// One read of the input: its trace, or its Error's message.
struct Read {
  std::optional<allocsim::Trace> trace;
  std::string error;
};

template <class How>
Read attempt(How how) {
  Read result;
  try {
    result.trace = how();
  } catch (const allocsim::Error& error) {
    result.error = error.what();
  }
  return result;
}

bool agree(const Read& a, const Read& b) {
  return a.error == b.error && a.trace.has_value() == b.trace.has_value() && (!a.trace || same(*a.trace, *b.trace));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const std::string& path = input_path();
  const Read whole = attempt([&] { return allocsim::parse_csv_trace(text, path); });
  std::ofstream(path, std::ios::binary | std::ios::trunc).write(text.data(), static_cast<std::streamsize>(size));
  const Read from_file = attempt([&] { return allocsim::read_csv_trace_file(path); });
  const Read streamed = attempt([&] { return allocsim::materialise(*allocsim::csv_trace_stream(text, path)); });
  if (!agree(whole, streamed)) std::abort();   // the whole read and the stream disagree
  if (!agree(whole, from_file)) std::abort();  // the text and its file disagree
  return 0;
}
