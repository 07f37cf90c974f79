// .atrace: a round trip keeps every field of a trace, ids become reused slots, and a
// truncated or corrupted file is an Error naming the file and an offset.
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <unistd.h>

#include <catch2/catch.hpp>

#include "same_results.hpp"
#include "sim/error.hpp"
#include "workloads/atrace.hpp"
#include "workloads/catalogue.hpp"
#include "workloads/csv_trace.hpp"

namespace allocsim {
namespace {

using test::check_same;

std::filesystem::path scratch(const std::string& name) {
  const auto folder = std::filesystem::temp_directory_path() / ("allocsim_atrace_test." + std::to_string(::getpid()));
  std::filesystem::create_directories(folder);
  return folder / name;
}

std::string slurp(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

const char* const kCsv =
    "time_ns,op,id,bytes,stream,tag\n"
    "0,alloc,a,1024,0,weight\n"
    "5,alloc,b,281474976710656,3,activation\n"  // 2^48 bytes: the largest request
    "6,free,b,,,\n"
    "7,alloc,c,0,2,temp\n"  // takes b's slot
    "9,release,,,,\n"
    "10,sync,stream,,2,\n"
    "11,sync,wait:1,,2,\n"
    "4000000000000000,free,a,,,\n"  // a gap of ~46 days
    "4000000000000001,alloc,a,512,1,runtime\n";

Trace csv_trace() {
  std::istringstream in(kCsv);
  return read_csv_trace(in, "t.csv");
}

TEST_CASE("CSV -> .atrace -> the same trace: sizes, streams, tags, syncs, times", "[atrace]") {
  const Trace trace = csv_trace();
  const auto path = scratch("round.atrace");
  write_atrace_file(trace, path);
  const std::string bytes = slurp(path);
  CHECK(bytes.size() == kAtraceHeaderBytes + kAtraceRecordBytes * trace.events.size());  // no sections: 16 B/event
  const Trace again = read_atrace_file(path);
  check_same(trace, again);
  CHECK(again.info.name == path.string());
  CHECK(again.info.source == "atrace");
  // The catalogue finds it by its magic, whatever its name.
  const auto renamed = scratch("no_extension");
  std::filesystem::copy_file(path, renamed, std::filesystem::copy_options::overwrite_existing);
  CHECK(find_reader(renamed.string()).name == "atrace");
  check_same(trace, load_workload(renamed.string()));
}

TEST_CASE(".atrace keeps layer names and step boundaries", "[atrace]") {
  TraceBuilder builder({"layered", "test"});
  builder.begin_step();
  const AllocId w = builder.alloc(0, 4096, 0, Tag::weight, "conv1");
  const AllocId x = builder.alloc(1, 100, 1, Tag::activation, "relu");
  builder.free(2, x);
  builder.begin_step();
  builder.alloc(3, 200, 0, Tag::activation, "relu");
  builder.alloc(4, 300, 0, Tag::gradient, "a layer name longer than eight bytes");
  builder.free(5, w);
  const Trace trace = std::move(builder).finish();
  const auto path = scratch("layers.atrace");
  write_atrace_file(trace, path);
  check_same(trace, read_atrace_file(path));
}

TEST_CASE(".atrace ids are slots: per-allocation state sized by the live set", "[atrace]") {
  // 1000 allocations, never more than two alive: two slots, whatever the allocation count.
  TraceBuilder builder({"pairs", "test"});
  AllocId held = builder.alloc(0, 8);
  for (Nanos t = 1; t < 1000; ++t) {
    const AllocId next = builder.alloc(t, 8 + t);
    builder.free(t, held);
    held = next;
  }
  const Trace trace = std::move(builder).finish();
  const auto path = scratch("pairs.atrace");
  write_atrace_file(trace, path);
  const std::unique_ptr<EventSource> stream = atrace_stream(path)->open();
  CHECK(stream->slots() == 2);
  CHECK(stream->events() == trace.events.size());
  std::uint32_t highest = 0;
  for (EventWindow window = stream->next(); !window.events.empty(); window = stream->next()) {
    for (const Event& event : window.events) highest = std::max(highest, index_of(event.id));
  }
  CHECK(highest == 1);
  check_same(trace, read_atrace_file(path));  // read whole, the ids are dense again
}

TEST_CASE("a truncated .atrace is an Error naming the file and an offset, at every length", "[atrace]") {
  const auto path = scratch("whole.atrace");
  write_atrace_file(csv_trace(), path);
  const std::string bytes = slurp(path);
  for (std::size_t length = 0; length < bytes.size(); ++length) {
    INFO("length " << length);
    CHECK_THROWS_AS(parse_atrace(std::string_view(bytes).substr(0, length), "cut.atrace"), Error);
    CHECK_THROWS_WITH(parse_atrace(std::string_view(bytes).substr(0, length), "cut.atrace"),
                      Catch::StartsWith("cut.atrace: offset "));
  }
}

TEST_CASE("a .atrace with any one byte changed is an Error, never a crash or another trace", "[atrace]") {
  TraceBuilder builder({"layered", "test"});
  builder.begin_step();
  const AllocId w = builder.alloc(0, 4096, 0, Tag::weight, "conv1");
  builder.free(2, w);
  const auto path = scratch("flip.atrace");
  write_atrace_file(std::move(builder).finish(), path);
  const std::string bytes = slurp(path);
  for (std::size_t at = 0; at < bytes.size(); ++at) {
    for (const unsigned char flip : {0x01, 0x80}) {
      std::string changed = bytes;
      changed[at] = static_cast<char>(changed[at] ^ flip);
      INFO("byte " << at << " ^ " << int(flip));
      CHECK_THROWS_WITH(parse_atrace(changed, "bad.atrace"), Catch::StartsWith("bad.atrace: offset "));
      // A changed record is the corruption it is, even when it fails to decode first.
      if (at >= kAtraceHeaderBytes && at < kAtraceHeaderBytes + 2 * kAtraceRecordBytes) {
        CHECK_THROWS_WITH(parse_atrace(changed, "bad.atrace"), Catch::Contains("the checksum does not match"));
      }
    }
  }
}

TEST_CASE("a streamed .atrace with a bad record stops with the file and offset", "[atrace]") {
  const auto path = scratch("stream_bad.atrace");
  write_atrace_file(csv_trace(), path);
  std::string bytes = slurp(path);
  bytes[kAtraceHeaderBytes + 2 * kAtraceRecordBytes + 8] ^= 0x40;  // the free of b names another slot
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << bytes;
  }
  const std::unique_ptr<EventSource> stream = atrace_stream(path)->open();
  const auto drain = [&] {
    for (EventWindow window = stream->next(); !window.events.empty(); window = stream->next()) {
    }
  };
  CHECK_THROWS_WITH(drain(), Catch::StartsWith(path.string() + ": offset " +
                                               std::to_string(kAtraceHeaderBytes + 2 * kAtraceRecordBytes)));
}

TEST_CASE("only .atrace and CSV files and the random generator stream; the rest says so", "[atrace]") {
  const std::string rmm_log = std::string(ALLOCSIM_TEST_DATA) + "/rmm_v21.04.csv";
  CHECK_THROWS_WITH(stream_workload(rmm_log),
                    Catch::Contains("is read whole") && Catch::Contains("atrace files") && Catch::Contains("csv files"));
  const auto csv = scratch("t.csv");
  {
    std::ofstream out(csv);
    out << kCsv;
  }
  CHECK(stream_workload(csv.string())->open()->events() == read_csv_trace_file(csv).events.size());
  CHECK_THROWS_WITH(stream_workload("frag:pattern=seed"), Catch::Contains("cannot stream"));
  CHECK(stream_workload("random:n=10")->open()->events() == 10);
}

}  // namespace
}  // namespace allocsim
