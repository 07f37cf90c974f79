// `allocsim trace info | convert | slice`: the command around the catalogue's readers and
// writers, summarize() and slice_trace().
#include <optional>
#include <string>
#include <vector>

#include <boost/program_options.hpp>

#include "app/commands.hpp"
#include "app/parse_options.hpp"
#include "sim/error.hpp"
#include "sim/output_paths.hpp"
#include "sim/units.hpp"
#include "workloads/catalogue.hpp"
#include "workloads/trace_slice.hpp"
#include "workloads/trace_summary.hpp"

namespace allocsim {

namespace po = boost::program_options;

namespace {

constexpr const char* kTraceUsage = R"(allocsim trace: look at a trace, change its format, cut a part of it.

Usage:
  allocsim trace info FILE                          what the trace holds
  allocsim trace convert IN OUT                     the same requests in another format
  allocsim trace slice IN OUT --events A:B          events A to B-1 as a trace of their own
  allocsim trace slice IN OUT --time A:B            the events from time A to before B
  (each takes --cuda-device N, for inputs that record several GPUs)

Inputs are any workload: a trace file in a format `allocsim workloads` lists (our CSV, a
PyTorch snapshot, an RMM log, a PyTorch profiler trace, a TensorFlow memory log; the
format is recognised by content), or a generator or model spec (resnet50_b64). The
output's format is its extension; writers:
)";

constexpr const char* kInfoNotes = R"(
info prints the format, the counts of events (allocations, frees, empty_cache releases,
syncs), the span of time, the live lower bound (the most requested bytes alive at once:
what no allocator can do with less) and the event where it is reached, what is still
alive at the end, steps and layers where the source has them, and the requests by stream
and by tag.
)";

constexpr const char* kConvertNotes = R"(
convert keeps what OUT's format holds (the list above). .atrace is the fast format: read
in place through a memory map, 16 bytes per event, no text to parse. CSV is the one to
read and edit. A large CSV replayed more than once is worth converting once:
  allocsim trace convert big.csv big.atrace
  allocsim --workload big.atrace --policy caching
)";

constexpr const char* kSliceNotes = R"(
slice keeps the events of the range, A included, B not; either end may be left out
(--events :5000, --time 2s:). --events counts from 0, as `run` numbers events; --time
takes 0, 250us, 1.5ms, 2s on the trace's own clock. The slice stands on its own:
  - blocks alive at the cut become allocations at its start (time 0), in the order they
    were made, so a replay starts with the memory the program held there;
  - frees after the end are dropped: what is alive at the end stays alive, as in a program
    that stopped there (the command says how many);
  - times start at 0 at the cut; step boundaries inside the range are kept, renumbered
    from 1 (the part before the first is step 1).
Example: one second of a recorded job, alone, then replayed:
  allocsim trace slice rmm_log.dev0.csv part.csv --time 2s:3s
  allocsim --workload part.csv --policy bfc
)";

struct TraceArguments {
  std::vector<std::string> files;
  std::optional<int> cuda_device;
  std::string events;
  std::string time;
};

std::string writers_list() {
  std::string text;
  for (const WriterInfo& writer : all_writers()) {
    text += "  " + std::string(writer.extension) + "  " + std::string(writer.name) + ": " + std::string(writer.summary) + "\n";
  }
  return text;
}

// Parses a subcommand's arguments; false when --help was asked (printed to `out`).
bool parse_trace_arguments(std::span<const std::string> args, TraceArguments& parsed, bool slice, std::ostream& out,
                           const char* notes) {
  po::options_description description("Options");
  description.add_options()("help,h", "this help")(
      "cuda-device", po::value<int>()->value_name("N")->notifier([&](int n) { parsed.cuda_device = n; }),
      "the GPU whose events to read, where the input records several (default: the only one)");
  if (slice) {
    description.add_options()("events", po::value(&parsed.events)->value_name("A:B"), "event indices A to B-1")(
        "time", po::value(&parsed.time)->value_name("A:B"), "events at times from A to before B (0, 250us, 2s)");
  }
  po::options_description hidden;
  hidden.add_options()("file", po::value(&parsed.files));
  po::options_description all;
  all.add(description).add(hidden);
  po::positional_options_description positional;
  positional.add("file", -1);
  if (parse_options(args, all, positional).count("help")) {
    out << kTraceUsage << writers_list() << notes << '\n' << description << '\n';
    return false;
  }
  return true;
}

LoadOptions load_options(const TraceArguments& parsed) {
  LoadOptions options;
  options.cuda_device = parsed.cuda_device;
  return options;
}

std::string format_of(const WorkloadSpec& input, const Trace& trace) {
  return input.file() ? std::string(input.file()->reader->name) : trace.info.source;
}

void expect_files(const TraceArguments& parsed, std::size_t count, const std::string& usage) {
  if (parsed.files.size() != count) {
    throw Error("trace " + usage + " (got " + std::to_string(parsed.files.size()) + " file" +
                (parsed.files.size() == 1 ? "" : "s") + "; see allocsim trace --help)");
  }
}

// Checks the output before anything is read or written: not an input, a folder that takes
// a new file, an extension a writer knows.
const WriterInfo& checked_output(const std::string& input, const std::string& output) {
  OutputPaths paths;
  if (names_a_file(input)) paths.input("IN", input);
  paths.output("OUT", output);
  paths.check();
  return find_writer(output);
}

int info(std::span<const std::string> args, std::ostream& out) {
  TraceArguments parsed;
  if (!parse_trace_arguments(args, parsed, false, out, kInfoNotes)) return 0;
  expect_files(parsed, 1, "info needs one trace: allocsim trace info FILE");
  const std::string& input = parsed.files.front();
  const WorkloadSpec spec = parse_workload_spec(input);
  const Trace trace = load_workload(spec, load_options(parsed));
  const TraceSummary summary = summarize(trace);
  out << "trace " << input << "\n"
      << "  format: " << format_of(spec, trace) << "\n"
      << "  events: " << summary.events << " (" << summary.allocations << " allocations, " << summary.frees << " frees, "
      << summary.releases << " releases, " << summary.syncs << " syncs)\n"
      << "  span: " << format_nanos(summary.last_time - summary.first_time) << " (from "
      << format_nanos(summary.first_time) << " to " << format_nanos(summary.last_time) << ")\n"
      << "  live lower bound: " << format_bytes(summary.live_lower_bound) << " (" << summary.live_lower_bound
      << " B, first at event " << summary.lower_bound_event << "); largest allocation "
      << format_bytes(summary.largest_allocation) << "\n"
      << "  alive at the end: " << summary.live_at_end << " allocations, " << format_bytes(summary.live_bytes_at_end) << "\n";
  out << "  steps: " << (summary.steps == 0 ? "none recorded" : std::to_string(summary.steps))
      << "; layers: " << (summary.layers == 0 ? "none recorded" : std::to_string(summary.layers)) << "\n";
  out << "  streams:";
  const char* separator = " ";
  for (const auto& [stream, count] : summary.streams) {
    out << separator << stream << " (" << count.allocations << " allocations, " << format_bytes(count.bytes) << ")";
    separator = ", ";
  }
  out << (summary.streams.empty() ? " none\n" : "\n") << "  tags:";
  separator = " ";
  for (int tag = 0; tag < kTagCount; ++tag) {
    const RequestCount& count = summary.tags[static_cast<std::size_t>(tag)];
    if (count.allocations == 0) continue;
    out << separator << name_of(static_cast<Tag>(tag)) << " (" << count.allocations << " allocations, "
        << format_bytes(count.bytes) << ")";
    separator = ", ";
  }
  out << (summary.allocations == 0 ? " none\n" : "\n");
  return 0;
}

int convert(std::span<const std::string> args, std::ostream& out) {
  TraceArguments parsed;
  if (!parse_trace_arguments(args, parsed, false, out, kConvertNotes)) return 0;
  expect_files(parsed, 2, "convert needs an input and an output: allocsim trace convert IN OUT");
  const std::string& input = parsed.files[0];
  const std::string& output = parsed.files[1];
  const WriterInfo& writer = checked_output(input, output);
  const WorkloadSpec spec = parse_workload_spec(input);
  const Trace trace = load_workload(spec, load_options(parsed));
  writer.write(trace, output);
  out << "wrote " << output << " (" << writer.name << "): " << trace.events.size() << " events, "
      << trace.allocations() << " allocations, from " << input << " (" << format_of(spec, trace) << ")\n";
  return 0;
}

// "A:B", either side empty: the two ends, each read by `parse`.
template <class Parse>
SliceRange parse_range(const std::string& text, SliceRange::By by, const std::string& option, Parse parse) {
  const auto colon = text.find(':');
  if (colon == std::string::npos || text.find(':', colon + 1) != std::string::npos) {
    throw Error(option + " '" + text + "' is not A:B (either end may be left out: " + option + " 100:, " + option + " :500)");
  }
  SliceRange range{by, {}, {}};
  const std::string begin = text.substr(0, colon);
  const std::string end = text.substr(colon + 1);
  if (!begin.empty()) range.begin = parse(begin);
  if (!end.empty()) range.end = parse(end);
  return range;
}

int slice(std::span<const std::string> args, std::ostream& out) {
  TraceArguments parsed;
  if (!parse_trace_arguments(args, parsed, true, out, kSliceNotes)) return 0;
  expect_files(parsed, 2, "slice needs an input and an output: allocsim trace slice IN OUT --events A:B");
  if (parsed.events.empty() == parsed.time.empty()) {
    throw Error("trace slice needs one of --events A:B or --time A:B");
  }
  const SliceRange range =
      parsed.events.empty()
          ? parse_range(parsed.time, SliceRange::By::time, "--time", [](const std::string& t) { return parse_nanos(t); })
          : parse_range(parsed.events, SliceRange::By::events, "--events",
                        [](const std::string& n) { return parse_unsigned(n, "--events '" + n + "'"); });
  const std::string& input = parsed.files[0];
  const std::string& output = parsed.files[1];
  const WriterInfo& writer = checked_output(input, output);
  const Trace trace = load_workload(parse_workload_spec(input), load_options(parsed));
  const TraceSlice cut = slice_trace(trace, range);
  writer.write(cut.trace, output);
  out << "wrote " << output << " (" << writer.name << "): events " << cut.first_event << " to " << cut.end_event - 1
      << " of " << trace.events.size() << " in " << input << ", " << cut.trace.events.size() << " events; "
      << cut.carried_in << " blocks alive at the cut allocated at its start; " << cut.frees_dropped
      << " frees after the end dropped (those blocks stay alive)\n";
  return 0;
}

}  // namespace

int trace_command(std::span<const std::string> args, std::ostream& out) {
  const std::string subcommand = args.empty() ? "" : args.front();
  if (subcommand == "info") return info(args.subspan(1), out);
  if (subcommand == "convert") return convert(args.subspan(1), out);
  if (subcommand == "slice") return slice(args.subspan(1), out);
  if (subcommand == "--help" || subcommand == "-h" || subcommand == "help") {
    out << kTraceUsage << writers_list() << kInfoNotes << kConvertNotes << kSliceNotes;
    return 0;
  }
  if (subcommand.empty()) throw Error("trace needs a subcommand: info, convert or slice (see allocsim trace --help)");
  throw Error("unknown trace subcommand '" + subcommand + "' (info, convert, slice; see allocsim trace --help)");
}

}  // namespace allocsim
