// The libFuzzer target of our CSV reader, read two ways: whole (parse_csv_trace) and as a
// stream (csv_trace_stream, read back whole). A bad input must be the same Error from both;
// a good one the same trace. Anything else (a difference, another exception, a sanitizer
// report) is a finding.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
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

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  std::optional<allocsim::Trace> whole;
  std::optional<allocsim::Trace> streamed;
  std::string whole_error;
  std::string stream_error;
  try {
    whole = allocsim::parse_csv_trace(text, "fuzz-input");
  } catch (const allocsim::Error& error) {
    whole_error = error.what();
  }
  try {
    const std::unique_ptr<allocsim::EventSource> stream = allocsim::csv_trace_stream(text, "fuzz-input");
    streamed = allocsim::materialise(*stream);
  } catch (const allocsim::Error& error) {
    stream_error = error.what();
  }
  if (whole_error != stream_error || whole.has_value() != streamed.has_value() || (whole && !same(*whole, *streamed))) {
    std::abort();  // the two reads disagree
  }
  return 0;
}
