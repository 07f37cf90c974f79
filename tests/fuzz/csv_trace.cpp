// The libFuzzer target of our CSV reader, read four ways: whole (parse_csv_trace), whole on
// two threads (one splitting rows, one building), as a stream (csv_trace_stream, read back
// whole) and from a file (read_csv_trace_file, which parses a mapped file from copies of
// it). A bad input must be the same Error from all; a good one the same trace. Anything
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
// exit; the other two reads name the input by it too, so that all errors read alike.
struct InputFile {
  std::string path =
      (std::filesystem::temp_directory_path() / ("allocsim-fuzz-csv-" + std::to_string(::getpid()))).string();
  ~InputFile() { std::filesystem::remove(path); }
};

const std::string& input_path() {
  static const InputFile file;
  return file.path;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const std::string& path = input_path();
  std::optional<allocsim::Trace> whole;
  std::optional<allocsim::Trace> on_two_threads;
  std::optional<allocsim::Trace> streamed;
  std::optional<allocsim::Trace> from_file;
  std::string whole_error;
  std::string two_threads_error;
  std::string stream_error;
  std::string file_error;
  try {
    whole = allocsim::parse_csv_trace(text, path, allocsim::CsvThreads::one);
  } catch (const allocsim::Error& error) {
    whole_error = error.what();
  }
  try {
    on_two_threads = allocsim::parse_csv_trace(text, path, allocsim::CsvThreads::two);
  } catch (const allocsim::Error& error) {
    two_threads_error = error.what();
  }
  std::ofstream(path, std::ios::binary | std::ios::trunc).write(text.data(), static_cast<std::streamsize>(size));
  try {
    from_file = allocsim::read_csv_trace_file(path, nullptr, allocsim::CsvThreads::one);
  } catch (const allocsim::Error& error) {
    file_error = error.what();
  }
  try {
    const std::unique_ptr<allocsim::EventSource> stream = allocsim::csv_trace_stream(text, path);
    streamed = allocsim::materialise(*stream);
  } catch (const allocsim::Error& error) {
    stream_error = error.what();
  }
  if (whole_error != two_threads_error || whole.has_value() != on_two_threads.has_value() ||
      (whole && !same(*whole, *on_two_threads))) {
    std::abort();  // one thread and two disagree
  }
  if (whole_error != stream_error || whole.has_value() != streamed.has_value() || (whole && !same(*whole, *streamed))) {
    std::abort();  // the whole read and the stream disagree
  }
  if (whole_error != file_error || whole.has_value() != from_file.has_value() || (whole && !same(*whole, *from_file))) {
    std::abort();  // the text and its file disagree
  }
  return 0;
}
