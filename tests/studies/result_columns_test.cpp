// One column table for every output: each field of a result walked through each output that
// shows it (CSV header and row, --json, the page's JSON, the terminal's table), which must
// carry it under its one name with the same value. The names are the CSV's, written out
// here: a field renamed or dropped in any output fails.
#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "cli_driver.hpp"
#include "recording_policies.hpp"
#include "sim/csv_columns.hpp"
#include "sim/metrics.hpp"
#include "studies/replay_from_recording.hpp"
#include "studies/synthetic_snapshot.hpp"
#include "workloads/torch_recording.hpp"

namespace allocsim {
namespace {

using nlohmann::json;

// RFC 4180 cells of one line (quoted cells may hold commas; no line breaks here).
std::vector<std::string> csv_cells(const std::string& line) {
  std::vector<std::string> cells{""};
  bool quoted = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted && c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
      cells.back() += '"';
      ++i;
    } else if (c == '"') {
      quoted = !quoted;
    } else if (c == ',' && !quoted) {
      cells.emplace_back();
    } else {
      cells.back() += c;
    }
  }
  return cells;
}

// The cells of the terminal table's row that starts with `label` (cells three spaces or more apart).
std::vector<std::string> table_cells(const std::string& out, const std::string& label) {
  for (const std::string& line : test::lines(out)) {
    if (line.rfind("  " + label + "   ", 0) != 0) continue;
    std::vector<std::string> cells;
    std::string rest = line.substr(2 + label.size());
    for (std::size_t at = rest.find_first_not_of(' '); at != std::string::npos; at = rest.find_first_not_of(' ', at)) {
      const std::size_t end = rest.find("   ", at);
      cells.push_back(rest.substr(at, end == std::string::npos ? std::string::npos : end - at));
      at = end;
    }
    return cells;
  }
  return {};
}

// Replaying test::kFragmentationOom, caching:max_split_size=20MiB takes a 20 MiB segment for
// the 4 MiB and reuses the 40 MiB block whole: 60 MiB reserved in 2 segments, 44 MiB
// allocated, no OOM.
TEST_CASE("the what-if's fields: one name each in the CSV, the page's JSON and the terminal's table", "[columns][replay]") {
  const test::TempDir dir;
  const std::string path = test::write_snapshot(dir, "oom.pickle", test::kFragmentationOom);
  const std::vector<RecordingPolicy> policies = test::recording_policies({"caching", "caching:max_split_size=20MiB"});
  const WhatIf what_if = replay_from_recording(read_torch_recording(path), policies, {});

  // Today's CSV, in its order; then the fields only people and the page have had.
  const std::vector<std::string> csv_names{"recording", "side", "policy", "start", "capacity_bytes",
                                           "peak_reserved_bytes", "peak_allocated_bytes", "device_mallocs",
                                           "oom_count", "avoided_recorded_oom"};
  const std::vector<std::string> other_names{"verdict", "at_the_request", "first_oom", "first_oom_kind",
                                             "first_oom_request_kind", "torch_setting"};
  std::vector<std::string> csv_declared, other_declared;
  for (const Column<WhatIfRow>& column : what_if_columns()) {
    (column.in_csv ? csv_declared : other_declared).emplace_back(column.name);
  }
  CHECK(csv_declared == csv_names);
  CHECK(other_declared == other_names);

  std::ostringstream csv_text;
  write_what_if_csv(csv_text, what_if, path);
  const std::vector<std::string> csv_lines = test::lines(csv_text.str());
  REQUIRE(csv_lines.size() == 4);
  CHECK(csv_cells(csv_lines[0]) == csv_names);
  const json sides = what_if_sides_json(what_if, path);
  REQUIRE(sides.size() == 3);
  const std::vector<WhatIfRow> rows = what_if_rows(what_if, path);

  for (const Column<WhatIfRow>& column : what_if_columns()) {
    const std::string name(column.name);
    INFO("field " << name);
    for (std::size_t side = 0; side < rows.size(); ++side) {
      INFO("side " << side);
      const MetricValue value = column.get(rows[side]);
      REQUIRE(sides[side].contains(name));
      CHECK(sides[side][name] == metric_json(value));
      CHECK(sides[side]["text"][name] == column_text(column, rows[side]));
      CHECK(sides[side]["brief"][name] == format_human(value, column.unit));
      if (column.in_csv) {
        const auto at = std::find(csv_names.begin(), csv_names.end(), name) - csv_names.begin();
        CHECK(csv_cells(csv_lines[side + 1]).at(static_cast<std::size_t>(at)) == format_plain(value));
      }
      // Bytes and counts are integers in the JSON, never text to parse.
      if (column.unit == Unit::bytes || column.unit == Unit::count) CHECK(sides[side][name].is_number_unsigned());
    }
  }
  // Nothing in the page's JSON that the table does not declare.
  for (const auto& [key, value] : sides[0].items()) {
    INFO("key " << key);
    CHECK((key == "text" || key == "brief" || std::find(csv_names.begin(), csv_names.end(), key) != csv_names.end() ||
           std::find(other_names.begin(), other_names.end(), key) != other_names.end()));
  }

  // The values worked by hand above, in each output.
  CHECK(sides[0]["peak_reserved_bytes"] == 40 * 1048576);
  CHECK(sides[0]["text"]["peak_reserved_bytes"] == "40 MiB (41943040 B)");
  CHECK(sides[0]["brief"]["peak_reserved_bytes"] == "40 MiB");
  CHECK(sides[0]["device_mallocs"] == 1);
  CHECK(sides[0]["oom_count"] == 1);
  CHECK(sides[0]["verdict"].is_null());
  CHECK(sides[0]["text"]["verdict"] == "-");
  CHECK(sides[2]["peak_reserved_bytes"] == 60 * 1048576);
  CHECK(sides[2]["peak_allocated_bytes"] == 44 * 1048576);
  CHECK(sides[2]["device_mallocs"] == 2);
  CHECK(sides[2]["oom_count"] == 0);
  CHECK(sides[2]["avoided_recorded_oom"] == "yes");
  CHECK(sides[2]["verdict"] == "fits");
  CHECK(csv_lines[1] == path + ",recorded,caching,as recorded," + std::to_string(70 * 1048576) + "," +
                            std::to_string(40 * 1048576) + "," + std::to_string(40 * 1048576) + ",1,1,");

  SECTION("the command line's table shows each field of the table, a row each, as the JSON's text") {
    const test::Outcome shown = test::cli({"replay", path, "--policy", "caching,caching:max_split_size=20MiB"});
    INFO(shown.out << shown.err);
    REQUIRE(shown.status == 0);
    for (const Column<WhatIfRow>& column : what_if_columns()) {
      if (!column.in_table || column_label(column).empty()) continue;
      INFO("field " << column.name);
      std::vector<std::string> expected;
      for (const json& side : sides) expected.push_back(side["text"][std::string(column.name)]);
      CHECK(table_cells(shown.out, std::string(column_label(column))) == expected);
    }
    CHECK(table_cells(shown.out, "reserved peak") ==
          std::vector<std::string>{"40 MiB (41943040 B)", "40 MiB (41943040 B)", "60 MiB (62914560 B)"});
  }
}

TEST_CASE("a run's metrics: one name each in the CSV, --json and the terminal's table", "[columns][metrics]") {
  const test::TempDir dir;
  const std::string csv = dir.file("run.csv");
  const std::string json_file = dir.file("run.json");
  const test::Outcome shown = test::cli({"run", "--workload", "random:n=2000,seed=3,live=64MiB", "--policy", "bfc",
                                         "--capacity", "48MiB", "--on-oom", "continue", "--csv", csv, "--json", json_file});
  INFO(shown.out << shown.err);
  REQUIRE(shown.status == 0);
  const std::vector<std::string> csv_lines = test::lines(test::read_file(csv));
  REQUIRE(csv_lines.size() == 2);
  const std::vector<std::string> header = csv_cells(csv_lines[0]);
  const std::vector<std::string> row = csv_cells(csv_lines[1]);
  const json tenant = json::parse(test::read_file(json_file))["tenants"].at(0);
  const std::vector<std::string> table = test::lines(shown.out);
  std::size_t at = 0;
  for (const Metric& metric : metrics()) {
    const std::string name(metric.name);
    INFO("field " << name);
    REQUIRE(at < header.size());
    CHECK(header[at] == name);  // in the table's order, before the policy's own statistics
    REQUIRE(tenant.contains(name));
    // The same value in the CSV and the JSON (a real's shortest text is the JSON's too).
    if (tenant[name].is_null()) {
      CHECK(row[at].empty());
    } else if (tenant[name].is_string()) {
      CHECK(row[at] == tenant[name].get<std::string>());
    } else if (tenant[name].is_number_unsigned()) {
      CHECK(row[at] == std::to_string(tenant[name].get<std::uint64_t>()));
    } else {
      CHECK(std::stod(row[at]) == tenant[name].get<double>());
    }
    const bool has_row = std::any_of(table.begin(), table.end(),
                                     [&](const std::string& line) { return line.rfind(name + "  ", 0) == 0; });
    CHECK(has_row == metric.in_table);
    ++at;
  }
  // A run out of memory has its first OOM in every output.
  CHECK(tenant["oom_count"].get<std::uint64_t>() > 0);
  CHECK(tenant["first_oom_bytes"].is_number_unsigned());
}

}  // namespace
}  // namespace allocsim
