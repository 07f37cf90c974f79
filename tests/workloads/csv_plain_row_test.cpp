#include <algorithm>
#include <array>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "sim/error.hpp"
#include "workloads/csv_plain_row.hpp"
#include "workloads/csv_trace.hpp"

namespace allocsim {
namespace {

TEST_CASE("a plain row reads into its fields; any other shape is left to the general path", "[csv]") {
  std::string text;  // the last line read: the row's views point into it
  const auto split = [&](const std::string& line) {
    text = line;  // each ends with a newline, as read_plain_row needs
    PlainRow row;
    const char* const next = read_plain_row(text.data(), text.data() + text.size(), row);
    if (next) CHECK(next == text.data() + text.size());
    return next ? std::optional<PlainRow>(row) : std::nullopt;
  };
  const auto alloc = split("12345678901,alloc,0x7f3a,1048576,3,activation\n");
  REQUIRE(alloc);
  CHECK(alloc->time == 12345678901);
  CHECK(alloc->alloc);
  CHECK(alloc->id == "0x7f3a");
  CHECK(alloc->bytes == 1048576);
  CHECK(alloc->stream == 3);
  CHECK(alloc->tag == "activation");
  const auto free = split("7,free,tensor-7/a.b:c,,,\n");
  REQUIRE(free);
  CHECK_FALSE(free->alloc);
  CHECK(free->id == "tensor-7/a.b:c");
  CHECK_FALSE(free->bytes);
  CHECK(free->stream == 0);
  CHECK(free->tag.empty());

  for (const std::string line : {
           "0,alloc,a,5,0,other\r\n",         // a CR
           " 0,alloc,a,5,0,other\n",          // a space at an end of a field
           "0,alloc, a,5,0,other\n",
           "0,alloc,a ,5,0,other\n",
           "0,alloc,a,5,0,other \n",
           "0,alloc,a,5,0\n",                 // five fields
           "0,alloc,a,5,0,other,x\n",         // seven
           "0,alloc,,5,0,other\n",            // no id
           "0,release,,,,\n",                 // not an alloc or free
           "0,sync,device,,0,\n",
           "0,Alloc,a,5,0,other\n",
           ",alloc,a,5,0,other\n",            // no time
           "12345678901234567890,alloc,a,5,0,other\n",  // 20 digits
           "0,alloc,a,-5,0,other\n",
           "0,alloc,a,5,123456,other\n",      // a stream of six digits
           "# a comment, with, five, commas, in it,\n",
           "\n",
           "0,alloc,a b,5,0,other\n",         // a space inside an id: the general path keeps it
           "0,alloc,a+b,5,0,other\n",         // a byte at or below ','
           "0,alloc,a\n,5,0,other\n",
       }) {
    INFO(line);
    CHECK_FALSE(split(line));
  }
  // A free's bytes, stream and tag are read as an alloc's; its tag is not looked up here.
  CHECK(split("0,free,a,5,65535,nonsense\n"));
  CHECK_FALSE(split("0,free,a,5,65536,other\n"));
  // 19 digits are read here; more may overflow, so they are the general path's.
  const auto big = split("9999999999999999999,alloc,a,1,0,\n");
  REQUIRE(big);
  CHECK(big->time == 9999999999999999999ULL);
}

// Only our header in our order lets a row take the plain path: under a header that starts as
// ours but swaps id and bytes, "0,alloc,5,7,0,other" is 5 bytes under id "7", though the row
// has the plain shape (read in our order, it would be 7 bytes under id "5").
TEST_CASE("a plain-shaped row under another column order is read by that order", "[csv]") {
  const Trace trace =
      parse_csv_trace("time_ns,op,bytes,id,stream,tag\n0,alloc,5,7,0,other\n1,free,5,7,0,\n2,alloc,9,5,0,temp\n",
                      "t.csv");
  REQUIRE(trace.events.size() == 3);
  CHECK(trace.bytes_of(trace.events[0].id) == 5);
  CHECK(trace.events[1].id == trace.events[0].id);  // the free of id "7"
  CHECK(trace.bytes_of(trace.events[2].id) == 9);
  CHECK_THROWS_WITH(parse_csv_trace("time_ns,op,bytes,id,stream,tag\n0,alloc,5,7,0,other\n1,free,7,5,0,\n", "t.csv"),
                    "t.csv:3: free of id 5, which is not live");
}

// One row's fields, written with the columns in `order` (a permutation of the six).
std::string row_text(const std::array<std::string, 6>& fields, const std::array<int, 6>& order) {
  std::string line;
  for (std::size_t i = 0; i < order.size(); ++i) line += (i ? "," : "") + fields[static_cast<std::size_t>(order[i])];
  return line;
}

std::string outcome(const std::string& text) {
  try {
    const Trace trace = parse_csv_trace(text, "t.csv");
    std::string shown;
    for (const Event& event : trace.events) {
      shown += std::to_string(event.time) + ' ' + std::string(name_of(event.op)) + ' ' +
               std::to_string(index_of(event.id)) + ' ' + std::to_string(event.stream) + ' ' +
               std::string(name_of(event.tag)) + ' ' +
               (names_allocation(event.op) ? std::to_string(trace.bytes_of(event.id)) : "-") + '\n';
    }
    return shown;
  } catch (const Error& error) {
    return std::string("error: ") + error.what();
  }
}

// Our own column order may take the plain path; any other order never does. The same rows
// under both headers must read to the same trace, or fail with the same message.
TEST_CASE("a CSV trace reads the same by the plain path as by the general one, errors included", "[csv]") {
  std::mt19937_64 rng(11);
  const std::array<int, 6> ours{0, 1, 2, 3, 4, 5};
  const std::array<int, 6> other{1, 0, 3, 2, 5, 4};  // op,time_ns,bytes,id,tag,stream
  const std::array<std::string, 6> names{"time_ns", "op", "id", "bytes", "stream", "tag"};
  const auto pick = [&](std::initializer_list<const char*> choices) {
    return std::string(choices.begin()[rng() % choices.size()]);
  };
  int errors = 0;
  for (int round = 0; round < 400; ++round) {
    std::string plain = row_text(names, ours) + '\n';
    std::string general = row_text(names, other) + '\n';
    std::vector<std::pair<std::string, std::string>> live;  // id, bytes
    std::uint64_t time = 0;
    int next_id = 0;
    for (int event = 0; event < 60; ++event) {
      time += rng() % 3 == 0 ? 0 : rng() % 5000;
      std::array<std::string, 6> fields;
      fields[0] = std::to_string(time);
      const bool alloc = live.empty() || rng() % 2 == 0;
      std::string id;
      if (alloc) {
        id = pick({"", "0x7f", "tensor_", "a b"}) + std::to_string(next_id++);
        fields[3] = std::to_string(rng() % 3000000);
        live.emplace_back(id, fields[3]);
      } else {
        const std::size_t at = rng() % live.size();
        id = live[at].first;
        fields[3] = rng() % 2 ? "" : live[at].second;
        live.erase(live.begin() + static_cast<std::ptrdiff_t>(at));
      }
      fields[1] = alloc ? "alloc" : "free";
      fields[2] = id;
      fields[4] = pick({"", "0", "1", "65535"});
      fields[5] = pick({"", "other", "activation", "weight"});
      // Now and then a line of another shape, or a mistake.
      switch (rng() % 300) {
        case 0: fields[2] = " " + fields[2]; break;
        case 1: fields[5] += "\r"; break;
        case 2: fields[3] = "x"; break;
        case 3: fields[4] = "70000"; break;
        case 4: fields[5] = "weights"; break;
        case 5: fields[1] = "release"; fields[2] = fields[3] = fields[4] = fields[5] = ""; break;
        case 6: fields[0] = std::to_string(time / 2); break;  // back in time
        case 7: fields[2] = "never" + std::to_string(rng() % 3); break;
        case 8: if (!alloc) fields[3] = "1"; break;  // a free that names another size
        default: break;
      }
      plain += row_text(fields, ours) + '\n';
      general += row_text(fields, other) + '\n';
      if (rng() % 30 == 0) {
        plain += "# a comment\n\n";
        general += "# a comment\n\n";
      }
    }
    const std::string expected = outcome(general);
    INFO(plain);
    REQUIRE(outcome(plain) == expected);
    errors += expected.starts_with("error: ") ? 1 : 0;
  }
  CHECK(errors > 40);  // the mistakes above were met, not only clean traces
  CHECK(errors < 360);
}

}  // namespace
}  // namespace allocsim
