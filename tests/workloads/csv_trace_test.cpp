#include <sys/stat.h>

#include <algorithm>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

#include "cli_driver.hpp"
#include "same_results.hpp"
#include "sim/error.hpp"
#include "sim/event_source.hpp"
#include "workloads/csv_trace.hpp"
#include "workloads/mapped_file.hpp"

namespace allocsim {
namespace {

Trace read(const std::string& text) {
  std::istringstream in(text);
  return read_csv_trace(in, "t.csv");
}

TEST_CASE("a CSV trace reads the same from a buffer, errors naming its line", "[csv]") {
  const std::string text = "\xEF\xBB\xBF# bom, then a comment\ntime_ns,op,id,bytes\n0,alloc,a,10\n4,free,a,";
  const Trace trace = parse_csv_trace(text, "buffer.csv");
  REQUIRE(trace.events.size() == 2);  // the last line has no newline
  CHECK(trace.events[1].time == 4);
  CHECK(read(text).events.size() == 2);
  CHECK_THROWS_WITH(parse_csv_trace("time_ns,op,id,bytes\n0,alloc,a,x\n", "buffer.csv"),
                    Catch::Contains("buffer.csv:2: bytes 'x'"));
}

TEST_CASE("a CSV trace reads with comments, reused ids, optional columns and release", "[csv]") {
  const Trace trace = read(
      "# a comment before the header\n"
      "time_ns,op,id,bytes,stream,tag\n"
      "0,alloc,0x7f00,1024,1,weight\n"
      "5,alloc,b,512,0,activation\n"
      "\n"
      "6,free,0x7f00,,,\n"
      "7,alloc,0x7f00,2048,0,temp\r\n"  // the same id again, now a new allocation
      "8,release,,,,\n"
      "9,free,b,512,0,activation\n");
  REQUIRE(trace.events.size() == 6);
  CHECK(trace.allocations() == 3);
  CHECK(trace.bytes_of(static_cast<AllocId>(2)) == 2048);
  CHECK(trace.events[0].stream == 1);
  CHECK(trace.events[0].tag == Tag::weight);
  CHECK(trace.events[2].op == Op::free);
  CHECK(trace.events[2].tag == Tag::weight);
  CHECK(trace.events[4].op == Op::release);
  CHECK(trace.live_lower_bound == 2560);
  CHECK(trace.info.name == "t.csv");

  const Trace minimal = read("op,time_ns,bytes,id\nalloc,3,100,x\n");  // any column order
  CHECK(minimal.events[0].tag == Tag::other);
  CHECK(minimal.events[0].time == 3);
}

TEST_CASE("a CSV trace knows the runtime tag, appended after the others", "[csv]") {
  const Trace trace = read("time_ns,op,id,bytes,stream,tag\n0,alloc,w,8519680,0,runtime\n");
  CHECK(trace.events[0].tag == Tag::runtime);
  CHECK(static_cast<int>(Tag::other) == 7);  // codes already written keep their meaning
  CHECK(name_of(Tag::runtime) == "runtime");
  CHECK_THROWS_WITH(read("time_ns,op,id,bytes,stream,tag\n0,alloc,w,1,0,nosuch\n"), Catch::EndsWith("temp, other, runtime, kv_cache)"));
}

TEST_CASE("a CSV trace round-trips through the writer", "[csv]") {
  const Trace trace = read("time_ns,op,id,bytes,stream,tag\n0,alloc,a,1,2,input\n1,release,,,,\n3,free,a,,,\n");
  std::ostringstream out;
  write_csv_trace(trace, out);
  CHECK(out.str() == "time_ns,op,id,bytes,stream,tag\n0,alloc,0,1,2,input\n1,release,,,,\n3,free,0,1,2,input\n");
  const Trace again = read(out.str());
  CHECK(again.events.size() == trace.events.size());
  CHECK(again.requested == trace.requested);
}

TEST_CASE("a UTF-8 byte order mark before the header is skipped", "[csv]") {
  const std::string body = "time_ns,op,id,bytes\n0,alloc,a,1024\n5,free,a,\n";
  const Trace plain = read(body);
  const Trace marked = read("\xEF\xBB\xBF" + body);  // as Excel and Notepad save a CSV
  REQUIRE(marked.events.size() == 2);
  CHECK(marked.events[0].time == plain.events[0].time);
  CHECK(marked.bytes_of(marked.events[0].id) == 1024);
  CHECK(claims_csv_trace("trace.txt", "\xEF\xBB\xBF" + body) == Claim::by_content);
  // Only at the start of the file: elsewhere it is a bad field.
  CHECK_THROWS_AS(read(body + "\xEF\xBB\xBF" "9,alloc,b,1\n"), Error);
}

TEST_CASE("a malformed CSV trace is one error naming file and line", "[csv]") {
  const std::string header = "time_ns,op,id,bytes,stream,tag\n";
  CHECK_THROWS_WITH(read("time_ns,op,id,stream\n"),
                    "t.csv:1: header lacks column 'bytes' (expected time_ns,op,id,bytes,stream,tag)");
  CHECK_THROWS_WITH(read(header + "0,alloc,a,10\n"), "t.csv:2: 4 fields, the header has 6");
  CHECK_THROWS_WITH(read(header + "0,alloc,a,ten,0,other\n"), "t.csv:2: bytes 'ten' is not a non-negative integer");
  // Issue 14: negative and too large say so.
  CHECK_THROWS_WITH(read(header + "0,alloc,a,-5,0,other\n"), "t.csv:2: bytes '-5' is negative");
  CHECK_THROWS_WITH(read(header + "0,alloc,a,99999999999999999999,0,other\n"),
                    Catch::StartsWith("t.csv:2: bytes '99999999999999999999' is too large"));
  CHECK_THROWS_WITH(read(header + "-1,alloc,a,5,0,other\n"), "t.csv:2: time_ns '-1' is negative");
  CHECK_THROWS_WITH(read(header + "x,alloc,a,5,0,other\n"), "t.csv:2: time_ns 'x' is not a non-negative integer");
  CHECK_THROWS_WITH(read(header + "0,malloc,a,5,0,other\n"), "t.csv:2: unknown op 'malloc' (alloc, free, release, sync)");
  CHECK_THROWS_WITH(read(header + "0,alloc,a,5,0,weights\n"), Catch::StartsWith("t.csv:2: unknown tag 'weights'"));
  CHECK_THROWS_WITH(read(header + "0,alloc,a,5,70000,other\n"), "t.csv:2: stream 70000 is over 65535");
  CHECK_THROWS_WITH(read(header + "0,alloc,a,5,,\n1,free,77,,,\n"), "t.csv:3: free of id 77, which is not live");
  // An id not live is said before a bad size on its row.
  CHECK_THROWS_WITH(read(header + "0,alloc,a,5,,\n1,free,77,x,,\n"), "t.csv:3: free of id 77, which is not live");
  CHECK_THROWS_WITH(read(header + "0,alloc,a,5,,\n1,free,a,,,\n2,free,a,,,\n"),
                    "t.csv:4: free of id a, which is not live");
  CHECK_THROWS_WITH(read(header + "0,alloc,a,5,,\n1,alloc,a,5,,\n"), "t.csv:3: alloc of id a, which is already live");
  CHECK_THROWS_WITH(read(header + "0,alloc,a,5,,\n1,free,a,6,,\n"),
                    "t.csv:3: free of id a says 6 bytes, its alloc said 5");
  CHECK_THROWS_WITH(read(header + "0,alloc,a,281474976710657,,\n"),
                    "t.csv:2: event 0: size 281474976710657 bytes is over the 2^48-byte limit");
  CHECK_THROWS_WITH(read(header + "5,alloc,a,1,,\n4,alloc,b,1,,\n"), "t.csv:3: event 1: time 4 ns goes back before 5 ns");
  CHECK_THROWS_WITH(read(header), "t.csv: empty trace: no events");
  CHECK_THROWS_WITH(read("# only a comment\n"), "t.csv: empty trace: no header and no events");
  CHECK_THROWS_WITH(read_csv_trace_file("/nonexistent/t.csv"), "/nonexistent/t.csv: cannot open");
}

}  // namespace
}  // namespace allocsim

namespace allocsim {
namespace {

TEST_CASE("a CSV trace reads and writes syncs: device, stream, event and wait", "[csv][sync]") {
  const std::string text =
      "time_ns,op,id,bytes,stream,tag\n"
      "0,alloc,a,1024,1,other\n"
      "1,free,a,1024,1,other\n"
      "2,sync,wait:1,,2,\n"
      "3,sync,stream,,1,\n"
      "4,sync,event,,2,\n"
      "5,sync,device,,,\n";
  std::istringstream in(text);
  const Trace trace = read_csv_trace(in, "t.csv");
  REQUIRE(trace.events.size() == 6);
  CHECK(trace.allocations() == 1);
  CHECK(trace.events[2].op == Op::sync);
  CHECK(sync_of(trace.events[2]) == Sync{SyncKind::wait, 2, 1});
  CHECK(sync_of(trace.events[3]) == Sync{SyncKind::stream, 1, 0});
  CHECK(sync_of(trace.events[4]) == Sync{SyncKind::event, 2, 0});
  CHECK(sync_of(trace.events[5]) == Sync{SyncKind::device, 0, 0});
  std::ostringstream out;
  write_csv_trace(trace, out);
  CHECK(out.str() ==
        "time_ns,op,id,bytes,stream,tag\n0,alloc,0,1024,1,other\n1,free,0,1024,1,other\n2,sync,wait:1,,2,\n"
        "3,sync,stream,,1,\n4,sync,event,,2,\n5,sync,device,,0,\n");
  std::istringstream bad("time_ns,op,id,bytes,stream,tag\n0,sync,host,,0,\n");
  CHECK_THROWS_WITH(read_csv_trace(bad, "t.csv"), "t.csv:2: sync kind 'host' is not device, stream, event or wait:STREAM");
  std::istringstream no_stream("time_ns,op,id,bytes,stream,tag\n0,sync,wait,,0,\n");
  CHECK_THROWS_WITH(read_csv_trace(no_stream, "t.csv"),
                    "t.csv:2: sync kind 'wait' is not device, stream, event or wait:STREAM");
}

}  // namespace
}  // namespace allocsim

namespace allocsim {
namespace {

using test::check_same;

TEST_CASE("a CSV trace parses the same from a buffer, a stream, a mapped file and a FIFO", "[csv]") {
  // No newline after the last line; a blank line; CRLF; a comment; an id reused.
  const std::string text =
      "\xEF\xBB\xBFtime_ns,op,id,bytes,stream,tag\r\n0,alloc,a,100,1,weight\r\n\r\n# note\n"
      "1,free,a,,,\n2,alloc,a,50,0,temp\n3,sync,device,,,\n4,free,a,50,0,temp";
  const Trace parsed = parse_csv_trace(text, "t.csv");
  CHECK(parsed.events.size() == 5);
  CHECK(parsed.allocations() == 2);
  std::istringstream in(text);
  check_same(parsed, read_csv_trace(in, "t.csv"));

  const test::TempDir dir;
  check_same(parsed, read_csv_trace_file(dir.file("t.csv", text)));
  const std::string fifo = dir.file("pipe.csv");
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  std::thread writer([&] { std::ofstream(fifo) << text; });
  const Trace piped = read_csv_trace_file(fifo);
  writer.join();
  check_same(parsed, piped);

  // Errors name the file and line whichever way the text came.
  CHECK_THROWS_WITH(read_csv_trace_file(dir.file("bad.csv", "time_ns,op,id,bytes\n\n0,alloc,a,x\n")),
                    (dir.path / "bad.csv").string() + ":3: bytes 'x' is not a non-negative integer");
  std::ofstream(dir.path / "empty.csv").flush();
  CHECK_THROWS_WITH(read_csv_trace_file(dir.path / "empty.csv"),
                    (dir.path / "empty.csv").string() + ": empty trace: no header and no events");
  CHECK_THROWS_WITH(read_csv_trace_file(dir.path), Catch::StartsWith(dir.path.string() + ": read error"));
}

// What a mapped file's parse must read as the same text in memory does: a MiB of rows,
// comments, blank and CRLF lines, a line of 600 KB, short ids and long ones (compared, at
// their free, with the text kept in the mapping), one live from the first row to the end,
// no newline at the end. Every time is 0, so that any line may become another row.
const std::string kLongLived = "long_lived_" + std::string(20, 'l');

std::vector<std::string> many_windows_of_rows() {
  std::vector<std::string> lines{"\xEF\xBB\xBFtime_ns,op,id,bytes,stream,tag", "0,alloc," + kLongLived + ",1,0,temp"};
  const auto id = [](std::size_t i) {
    return i % 3 == 0 ? std::to_string(i) : "addr_" + std::string(12, 'f') + std::to_string(i);
  };
  for (std::size_t i = 0; i < 40'000; ++i) {
    lines.push_back("0,alloc," + id(i) + "," + std::to_string(256 + i % 5000) + ",0,temp");
    if (i >= 30) lines.push_back("0,free," + id(i - 30) + ",,,");
    if (i % 1000 == 7) lines.push_back("# a comment");
    if (i % 1000 == 8) lines.emplace_back();
    if (i % 1000 == 9) lines.back() += "\r";
    if (i == 20'000) lines.push_back("#" + std::string(600'000, 'c'));
  }
  lines.push_back("0,free," + kLongLived + ",1,,");
  return lines;
}

std::string joined(const std::vector<std::string>& lines) {
  std::string text;
  for (const std::string& line : lines) text += line + "\n";
  text.pop_back();  // no newline after the last line
  return text;
}

// A file streamed (csv_trace_file_stream, read back whole), or its error.
std::string stream_file(const std::string& path, std::optional<Trace>& trace) {
  try {
    trace = materialise(*csv_trace_file_stream(path)->open());
  } catch (const Error& error) {
    return error.what();
  }
  return "none";
}

TEST_CASE("a mapped CSV file, read whole or streamed, reads as its text in memory, with the same errors",
          "[csv][stream]") {
  const test::TempDir dir;
  std::vector<std::string> lines = many_windows_of_rows();
  const std::string text = joined(lines);
  REQUIRE(text.size() > 4 * kCopyWindow);
  const std::string path = dir.file("t.csv", text);
  const Trace in_memory = parse_csv_trace(text, path);
  check_same(in_memory, read_csv_trace_file(path));
  std::optional<Trace> streamed;
  CHECK(stream_file(path, streamed) == "none");
  REQUIRE(streamed.has_value());
  check_same(in_memory, *streamed);

  // A bad line on either side of the first few 256 KiB boundaries, after the long line, and
  // last: a bad time, or an alloc of the id live since the first row.
  std::vector<std::size_t> bad;
  std::size_t offset = 0;
  for (std::size_t line = 0, window = 1; line < lines.size() && window <= 3; offset += lines[line++].size() + 1) {
    if (offset + lines[line].size() + 1 < window * kCopyWindow) continue;
    for (std::size_t near = line - 2; near <= line + 2; ++near) bad.push_back(near);
    ++window;
  }
  const auto is_long = [](const std::string& line) { return line.size() > 1000; };
  const auto long_line = static_cast<std::size_t>(std::find_if(lines.begin(), lines.end(), is_long) - lines.begin());
  for (const std::size_t near : {long_line + 1, long_line + 2, lines.size() - 1}) bad.push_back(near);
  for (const std::size_t line : bad) {
    for (const std::string& wrong : {std::string("x,alloc,1,1,0,temp"), "0,alloc," + kLongLived + ",1,0,temp"}) {
      std::vector<std::string> changed = lines;
      changed[line] = wrong;
      const std::string changed_text = joined(changed);
      INFO("line " << line + 1 << ": " << wrong);
      std::string expected = "none";
      try {
        parse_csv_trace(changed_text, path);
      } catch (const Error& error) {
        expected = error.what();
      }
      CHECK(expected != "none");
      if (!wrong.starts_with("x") && line + 1 != lines.size()) {
        CHECK_THAT(expected, Catch::Contains(kLongLived + ", which is already live"));
      }
      dir.file("t.csv", changed_text);
      CHECK_THROWS_WITH(read_csv_trace_file(path), expected);
      CHECK(stream_file(path, streamed) == expected);
    }
  }
}

TEST_CASE("a CSV trace's ids are texts: an id as long as a line, ids alike but for their end", "[csv]") {
  const std::string long_id(300, 'z');
  const Trace trace = parse_csv_trace("time_ns,op,id,bytes\n0,alloc," + long_id + ",1\n1,alloc," + long_id +
                                          "y,2\n2,alloc,7,3\n3,alloc,07,4\n4,free," + long_id + ",\n5,free,07,4\n",
                                      "t.csv");
  REQUIRE(trace.events.size() == 6);
  CHECK(trace.events[4].id == AllocId{0});
  CHECK(trace.events[5].id == AllocId{3});  // "07" is not "7"
  CHECK_THROWS_WITH(parse_csv_trace("time_ns,op,id,bytes\n0,alloc,7,1\n1,free,07,\n", "t.csv"),
                    "t.csv:3: free of id 07, which is not live");
}


// The whole read and the stream (read back whole: materialise renumbers its slots dense)
// give the same trace, or the same error.
void check_reads_alike(const std::string& text) {
  INFO(text);
  const auto read = [&](const auto& how, std::optional<Trace>& trace) -> std::string {
    try {
      trace = how();
    } catch (const Error& error) {
      return error.what();
    }
    return "none";
  };
  std::optional<Trace> whole;
  std::optional<Trace> streamed;
  const std::string whole_error = read([&] { return parse_csv_trace(text, "t.csv"); }, whole);
  CHECK(read([&] { return materialise(*csv_trace_stream(text, "t.csv")); }, streamed) == whole_error);
  REQUIRE(whole.has_value() == streamed.has_value());
  if (whole) {
    check_same(*whole, *streamed);
  }
}

TEST_CASE("a streamed CSV trace is the trace read whole, with the same errors",
          "[csv][stream]") {
  const std::string header = "time_ns,op,id,bytes,stream,tag\n";
  check_reads_alike("\xEF\xBB\xBF# bom, a comment\n" + header +
                    "0,alloc,0x7f00,1024,1,weight\n5,alloc,b,512,0,activation\n\n6,free,0x7f00,,,\n"
                    "7,alloc,0x7f00,2048,0,temp\r\n8,release,,,,\n9,free,b,512,0,activation\n"
                    "10,sync,wait:1,,0,\n11,sync,device,,,\n12,free,0x7f00,2048,0,temp");
  check_reads_alike("op,time_ns,bytes,id\nalloc,3,100,x\nfree,4,,x\n");  // another column order
  for (const std::string& rows : {
           std::string("0,alloc,a,10\n"), std::string("0,alloc,a,ten,0,other\n"), std::string("0,malloc,a,5,0,other\n"),
           std::string("0,alloc,a,5,0,weights\n"), std::string("0,alloc,a,5,70000,other\n"),
           std::string("0,alloc,a,5,,\n1,free,77,,,\n"), std::string("0,alloc,a,5,,\n1,free,a,,,\n2,free,a,,,\n"),
           std::string("0,alloc,a,5,,\n1,alloc,a,5,,\n"), std::string("0,alloc,a,5,,\n1,free,a,6,,\n"),
           std::string("0,alloc,a,281474976710657,,\n"), std::string("5,alloc,a,1,,\n4,alloc,b,1,,\n"),
           std::string("0,alloc,a,18446744073709551615,,\n"), std::string(""), std::string("# only a comment\n")}) {
    check_reads_alike(header + rows);
  }
  check_reads_alike("");  // the fuzz target's first finding: the stream said less
  check_reads_alike("\xEF\xBB\xBF");
  check_reads_alike("time_ns,op,id,stream\n");
  check_reads_alike("# only a comment\n");
}

TEST_CASE("a streamed CSV trace reuses slots, hands out windows, and counts what an early stop left", "[csv][stream]") {
  // Many more rows than a window holds, never more than two allocations live.
  std::string text = "time_ns,op,id,bytes\n";
  for (int row = 0; row < 10000; ++row) {
    text += std::to_string(2 * row) + ",alloc,id" + std::to_string(row) + "," + std::to_string(row + 1) + "\n";
    if (row > 0) text += std::to_string(2 * row + 1) + ",free,id" + std::to_string(row - 1) + ",\n";
  }
  const std::unique_ptr<EventSource> stream = csv_trace_stream(text, "t.csv");
  CHECK_FALSE(stream->live_lower_bound().has_value());  // known at the end only
  CHECK(stream->events() == 19999);                     // counted by reading it all, once more
  std::size_t events = 0;
  std::size_t windows = 0;
  std::uint32_t highest = 0;
  for (EventWindow window = stream->next(); !window.events.empty(); window = stream->next()) {
    ++windows;
    for (std::size_t i = 0; i < window.events.size(); ++i) {
      highest = std::max(highest, index_of(window.events[i].id));
      if (window.events[i].op == Op::alloc) CHECK(window.bytes_at(i) == (events + 3) / 2);
      ++events;
    }
  }
  CHECK(events == 19999);
  CHECK(windows > 1);
  CHECK(highest == 1);
  CHECK(stream->slots() == 2);
  CHECK(stream->live_lower_bound() == 10000 + 9999);
  CHECK(stream->events() == 19999);
  check_reads_alike(text);
}

}  // namespace
}  // namespace allocsim
