// One column table for every output: each field of a result walked through each output that
// shows it (CSV header and row, --json, the page's JSON, a --report page's JSON, the Python
// package's table, the terminal's table or sentences), which must carry it under its one name
// with the same value, and in the terminal with its column's text. The names are the CSV's,
// written out here: a field renamed or dropped in any output fails.
#include <algorithm>
#include <cstdio>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "cli_driver.hpp"
#include "policies/registry.hpp"
#include "recording_policies.hpp"
#include "sim/csv_columns.hpp"
#include "sim/device_presets.hpp"
#include "sim/metrics.hpp"
#include "studies/advise.hpp"
#include "studies/maxbatch_study.hpp"
#include "studies/replay_from_recording.hpp"
#include "studies/replay_log.hpp"
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

// The cells of a line of a table whose columns are two spaces or more apart, without the indent.
std::vector<std::string> spaced_cells(const std::string& line) {
  static const std::regex gap("  +");
  std::vector<std::string> cells;
  const std::string trimmed = line.substr(std::min(line.find_first_not_of(' '), line.size()));
  for (std::sregex_token_iterator it(trimmed.begin(), trimmed.end(), gap, -1), end; it != end; ++it) {
    cells.push_back(*it);
  }
  return cells;
}

// The JSON a --report page carries (studies/report_page: one script element, '<' escaped).
json report_data(const std::string& page_file) {
  const std::string page = test::read_file(page_file);
  const std::string open = "<script type=\"application/json\" id=\"report-data\">";
  const std::size_t from = page.find(open);
  REQUIRE(from != std::string::npos);
  const std::size_t to = page.find("</script>", from);
  REQUIRE(to != std::string::npos);
  return json::parse(page.substr(from + open.size(), to - from - open.size()));
}

// A CSV cell holds the JSON's value: empty for null, the text, the integer's digits, or a
// real's shortest text (which reads back as the same double).
void check_cell(const std::string& cell, const json& value) {
  if (value.is_null()) {
    CHECK(cell.empty());
  } else if (value.is_string()) {
    CHECK(cell == value.get<std::string>());
  } else if (value.is_number_unsigned()) {
    CHECK(cell == std::to_string(value.get<std::uint64_t>()));
  } else {
    CHECK(std::stod(cell) == value.get<double>());
  }
}

// The cell of a one-tenant run's table on the row of `name` ("name   value", right-aligned).
std::string run_table_cell(const std::string& out, const std::string& name) {
  for (const std::string& line : test::lines(out)) {
    if (line.rfind(name + "  ", 0) != 0) continue;
    return line.substr(line.find_first_not_of(' ', name.size()));
  }
  return "(no row " + name + ")";
}

// A lane's keys of the page's own; every other key is a field of a column table.
const std::vector<std::string> kLaneOwnKeys{"label", "run", "verdict_detail", "peak", "series", "map", "ooms",
                                            "text", "brief"};

template <typename Row>
std::vector<std::string> declared_names(std::span<const Column<Row>> columns) {
  std::vector<std::string> names;
  for (const Column<Row>& column : columns) names.emplace_back(column.name);
  return names;
}

// Each row of the CSV at `path` (header first) holds each column's format_plain, and the table
// the Python package makes its DataFrame of is the same cells.
template <typename Row>
void check_csv_and_table(std::span<const Column<Row>> columns, const std::vector<Row>& rows, const std::string& path,
                         const StudyTable& table) {
  const std::vector<std::string> csv_lines = test::lines(test::read_file(path));
  REQUIRE(csv_lines.size() == rows.size() + 1);
  CHECK(csv_cells(csv_lines[0]) == declared_names(columns));
  CHECK(table.columns == declared_names(columns));
  REQUIRE(table.rows.size() == rows.size());
  for (std::size_t r = 0; r < rows.size(); ++r) {
    INFO("row " << r);
    const std::vector<std::string> cells = csv_cells(csv_lines[r + 1]);
    REQUIRE(cells.size() == columns.size());
    for (std::size_t c = 0; c < columns.size(); ++c) {
      INFO("field " << columns[c].name);
      CHECK(cells[c] == format_plain(columns[c].get(rows[r])));
    }
    CHECK(table.rows[r] == cells);
  }
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

// A run of bfc on too small a device (every output has its first OOM) with --csv and --json
// and `more` options: what it printed, its CSV header and row, and --json's tenant.
struct RunOutputs {
  test::Outcome shown;
  std::vector<std::string> header;
  std::vector<std::string> row;
  json tenant;
};
RunOutputs run_out_of_memory(const test::TempDir& dir, const std::vector<std::string>& more) {
  const std::string csv = dir.file("run.csv");
  const std::string json_file = dir.file("run.json");
  std::vector<std::string> args{"run",        "--workload", "random:n=2000,seed=3,live=64MiB", "--policy", "bfc",
                                "--capacity", "48MiB",      "--on-oom", "continue", "--csv", csv, "--json", json_file};
  args.insert(args.end(), more.begin(), more.end());
  RunOutputs run{test::cli(args), {}, {}, {}};
  INFO(run.shown.out << run.shown.err);
  REQUIRE(run.shown.status == 0);
  const std::vector<std::string> csv_lines = test::lines(test::read_file(csv));
  REQUIRE(csv_lines.size() == 2);
  run.header = csv_cells(csv_lines[0]);
  run.row = csv_cells(csv_lines[1]);
  run.tenant = json::parse(test::read_file(json_file))["tenants"].at(0);
  return run;
}

TEST_CASE("a run's metrics: one name each in the CSV, --json and the terminal's table", "[columns][metrics]") {
  const test::TempDir dir;
  const RunOutputs run = run_out_of_memory(dir, {});
  const auto& [shown, header, row, tenant] = run;
  const std::vector<std::string> table = test::lines(shown.out);
  std::size_t at = 0;
  for (const Metric& metric : metrics()) {
    const std::string name(metric.name);
    INFO("field " << name);
    REQUIRE(at < header.size());
    CHECK(header[at] == name);  // in the table's order, before the policy's own statistics
    REQUIRE(tenant.contains(name));
    // The same value in the CSV and the JSON (a real's shortest text is the JSON's too).
    check_cell(row[at], tenant[name]);
    const bool has_row = std::any_of(table.begin(), table.end(),
                                     [&](const std::string& line) { return line.rfind(name + "  ", 0) == 0; });
    CHECK(has_row == metric.in_table);
    ++at;
  }
  // A run out of memory has its first OOM in every output.
  CHECK(tenant["oom_count"].get<std::uint64_t>() > 0);
  CHECK(tenant["first_oom_bytes"].is_number_unsigned());
}

// The page of the run above: its lane carries every run metric but the wall-clock two under its
// CSV name, with --json's value and the table's text; its device under the metrics' names; its
// verdict and OOMs as --json's objects.
TEST_CASE("a run's --report page: each field under its one name, as in the CSV, --json and the table",
          "[columns][report]") {
  const test::TempDir dir;
  const std::string page = dir.file("run.html");
  const RunOutputs run = run_out_of_memory(dir, {"--report", page});
  const auto& [shown, header, row, tenant] = run;
  const json data = report_data(page);
  REQUIRE(data["lanes"].size() == 1);
  const json& lane = data["lanes"][0];
  for (const Metric& metric : metrics()) {
    const std::string name(metric.name);
    INFO("field " << name);
    if (is_wall_clock(metric)) {  // the page is the same bytes on every run
      CHECK(!lane.contains(name));
      CHECK(!lane["text"].contains(name));
      continue;
    }
    REQUIRE(lane.contains(name));
    CHECK(lane[name] == tenant[name]);
    const auto at = static_cast<std::size_t>(std::find(header.begin(), header.end(), name) - header.begin());
    REQUIRE(at < row.size());
    check_cell(row[at], lane[name]);
    if (metric.unit == Unit::bytes || metric.unit == Unit::count) {
      CHECK((lane[name].is_null() || lane[name].is_number_unsigned()));
    }
    CHECK(lane["brief"][name] == lane["text"][name]);  // a metric has one formatter
    if (metric.in_table) CHECK(run_table_cell(shown.out, name) == lane["text"][name].get<std::string>());
  }
  for (const auto& [key, value] : lane.items()) {
    INFO("key " << key);
    const bool own = std::find(kLaneOwnKeys.begin(), kLaneOwnKeys.end(), key) != kLaneOwnKeys.end();
    const bool metric = std::any_of(metrics().begin(), metrics().end(), [&](const Metric& m) { return m.name == key; });
    CHECK(own != metric);
  }
  CHECK(lane["verdict_detail"] == tenant["verdict_detail"]);
  REQUIRE(!lane["ooms"].empty());
  for (std::size_t i = 0; i < lane["ooms"].size(); ++i) {
    INFO("OOM " << i);
    for (const auto& [key, value] : tenant["ooms"].at(i).items()) CHECK(lane["ooms"][i][key] == value);
  }
  // The device as the run metrics name it; 48 MiB worked by hand in each form.
  REQUIRE(data["runs"].size() == 1);
  CHECK(data["runs"][0]["device"] == tenant["device"]);
  CHECK(data["runs"][0]["capacity_bytes"] == 48 * 1048576);
  CHECK(data["runs"][0]["brief"]["capacity_bytes"] == "48 MiB");
  CHECK(lane["capacity_bytes"] == 48 * 1048576);
  CHECK(lane["oom_count"].get<std::uint64_t>() > 0);
}

// test::kFragmentationOom replayed as in the what-if's case above, with --report: each replayed
// side's lane carries every field of its what-if row with the CSV's and the page's value (a
// what-if counts without the CUDA context and the recording's start, so its value wins over the
// run metric's of the same name), and the run metrics the what-if has not.
TEST_CASE("a recording's --report page: each side's lane has its what-if row under the CSV's names",
          "[columns][report][replay]") {
  const test::TempDir dir;
  const std::string path = test::write_snapshot(dir, "oom.pickle", test::kFragmentationOom);
  const std::string csv = dir.file("what_if.csv");
  const std::string page = dir.file("what_if.html");
  const test::Outcome shown = test::cli({"replay", path, "--policy", "caching,caching:max_split_size=20MiB", "--csv",
                                         csv, "--report", page});
  INFO(shown.out << shown.err);
  REQUIRE(shown.status == 0);
  const std::vector<RecordingPolicy> policies = test::recording_policies({"caching", "caching:max_split_size=20MiB"});
  const WhatIf what_if = replay_from_recording(read_torch_recording(path), policies, {});
  const json sides = what_if_sides_json(what_if, path);
  REQUIRE(sides.size() == 3);
  const std::vector<std::string> csv_lines = test::lines(test::read_file(csv));
  REQUIRE(csv_lines.size() == 4);
  const std::vector<std::string> header = csv_cells(csv_lines[0]);
  const json data = report_data(page);
  REQUIRE(data["lanes"].size() == 2);
  for (std::size_t side = 1; side < sides.size(); ++side) {
    INFO("side " << side);
    const json& lane = data["lanes"][side - 1];
    for (const Column<WhatIfRow>& column : what_if_columns()) {
      const std::string name(column.name);
      INFO("field " << name);
      REQUIRE(lane.contains(name));
      CHECK(lane[name] == sides[side][name]);
      CHECK(lane["text"][name] == sides[side]["text"][name]);
      CHECK(lane["brief"][name] == sides[side]["brief"][name]);
      const auto at = static_cast<std::size_t>(std::find(header.begin(), header.end(), name) - header.begin());
      CHECK((at < header.size()) == column.in_csv);
      if (at < header.size()) {
        const std::string cell = csv_cells(csv_lines[side + 1]).at(at);
        CHECK(cell == (lane[name].is_string() ? lane[name].get<std::string>()
                       : lane[name].is_null() ? std::string()
                                              : std::to_string(lane[name].get<std::uint64_t>())));
      }
    }
    // The run metrics the what-if does not declare are there too, under their names.
    for (const char* name : {"live_lower_bound_bytes", "peak_requested_bytes", "events", "end_time_ns"}) {
      CHECK(lane.contains(name));
    }
    CHECK(lane["label"] == sides[side]["policy"]);
  }
  // Worked by hand (the what-if's case above): max_split_size=20MiB reserves 60 MiB in 2 segments.
  const json& split = data["lanes"][1];
  CHECK(split["peak_reserved_bytes"] == 60 * 1048576);
  CHECK(split["text"]["peak_reserved_bytes"] == "60 MiB (62914560 B)");
  CHECK(split["brief"]["peak_reserved_bytes"] == "60 MiB");
  CHECK(split["device_mallocs"] == 2);
  CHECK(split["oom_count"] == 0);
  CHECK(split["verdict"] == "fits");

  SECTION("on a card with a CUDA context, the what-if's reserved peak (without it) is the lane's, as in --csv") {
    REQUIRE(device_spec("v100-16gb").context_overhead > 0);
    const std::string on_card = dir.file("v100.csv");
    const std::string card_page = dir.file("v100.html");
    const test::Outcome replayed = test::cli({"replay", path, "--policy", "caching,caching:max_split_size=20MiB",
                                              "--device", "v100-16gb", "--csv", on_card, "--report", card_page});
    INFO(replayed.out << replayed.err);
    REQUIRE(replayed.status == 0);
    const std::vector<std::string> lines = test::lines(test::read_file(on_card));
    REQUIRE(lines.size() == 4);
    const auto at =
        static_cast<std::size_t>(std::find(header.begin(), header.end(), "peak_reserved_bytes") - header.begin());
    const json lanes = report_data(card_page)["lanes"];
    REQUIRE(lanes.size() == 2);
    for (std::size_t side = 1; side < 3; ++side) {
      CHECK(std::to_string(lanes[side - 1]["peak_reserved_bytes"].get<Bytes>()) == csv_cells(lines[side + 1]).at(at));
    }
  }
}

// The log above, replayed with --report: each lane has its row of the log's table (the log's own
// fields beside the run metrics'), and its in_csv fields hold --csv's value.
TEST_CASE("a log's --report page: each lane has its row of the log's table", "[columns][report][replay]") {
  const test::TempDir dir;
  const std::string csv = dir.file("log.csv");
  const std::string page = dir.file("log.html");
  const std::string log = std::string(ALLOCSIM_TEST_DATA) + "/rmm_pool_oom.dev0.csv";
  const test::Outcome shown = test::cli({"replay", log, "--capacity", "64MiB", "--policy", "rmm-pool,bfc", "--csv", csv,
                                         "--report", page});
  INFO(shown.out << shown.err);
  REQUIRE(shown.status == 0);
  const std::vector<std::string> csv_lines = test::lines(test::read_file(csv));
  REQUIRE(csv_lines.size() == 3);
  const std::vector<std::string> header = csv_cells(csv_lines[0]);
  const json data = report_data(page);
  REQUIRE(data["lanes"].size() == 2);
  for (const Column<LogReplayRow>& column : log_replay_columns()) {
    const std::string name(column.name);
    INFO("field " << name);
    std::vector<std::string> texts;
    for (std::size_t side = 0; side < 2; ++side) {
      const json& lane = data["lanes"][side];
      REQUIRE(lane.contains(name));
      texts.push_back(lane["text"][name]);
      const auto at = static_cast<std::size_t>(std::find(header.begin(), header.end(), name) - header.begin());
      CHECK((at < header.size()) == column.in_csv);
      if (at < header.size() && lane[name].is_number_unsigned()) {
        CHECK(csv_cells(csv_lines[side + 1]).at(at) == std::to_string(lane[name].get<std::uint64_t>()));
      } else if (at < header.size() && lane[name].is_string()) {
        CHECK(csv_cells(csv_lines[side + 1]).at(at) == lane[name].get<std::string>());
      }
    }
    CHECK(table_cells(shown.out, std::string(column_label(column))) == texts);
  }
  // Worked by hand (the log's case above): 4 OOMs, the log's one failure among them, 3 elsewhere.
  CHECK(data["lanes"][0]["oom_count"] == 4);
  CHECK(data["lanes"][0]["failures_reproduced"] == 1);
  CHECK(data["lanes"][0]["text"]["failures_reproduced"] == "1 of 1");
  CHECK(data["lanes"][0]["ooms_elsewhere"] == 3);
  CHECK(data["lanes"][0]["live_lower_bound_bytes"].is_number_unsigned());
}

// A sweep's page: each facet's capacity under the CSV's name, with its value and the metric's text.
TEST_CASE("a sweep's --report page: the capacity under its CSV name", "[columns][report]") {
  const test::TempDir dir;
  const std::string csv = dir.file("sweep.csv");
  const std::string page = dir.file("sweep.html");
  const test::Outcome shown = test::cli({"sweep", "--workload", "random:n=200,live=1MiB", "--policy", "direct",
                                         "--capacity", "256MiB,1GiB", "--quiet", "--csv", csv, "--report", page});
  INFO(shown.out << shown.err);
  REQUIRE(shown.status == 0);
  const std::vector<std::string> csv_lines = test::lines(test::read_file(csv));
  const std::vector<std::string> header = csv_cells(csv_lines.at(0));
  const auto at = static_cast<std::size_t>(std::find(header.begin(), header.end(), "capacity_bytes") - header.begin());
  REQUIRE(at < header.size());
  std::vector<std::string> capacities;
  for (std::size_t line = 1; line < csv_lines.size(); ++line) capacities.push_back(csv_cells(csv_lines[line]).at(at));
  const json data = report_data(page);
  REQUIRE(data["facets"].size() == 2);
  for (const json& facet : data["facets"]) {
    INFO(facet["name"]);
    REQUIRE(facet.contains("capacity_bytes"));
    CHECK(std::find(capacities.begin(), capacities.end(), std::to_string(facet["capacity_bytes"].get<Bytes>())) !=
          capacities.end());
    CHECK(facet["brief"]["capacity_bytes"] == format_human(facet["capacity_bytes"].get<Bytes>(), Unit::bytes));
    CHECK(!facet.contains("capacity"));
  }
  CHECK(data["facets"][0]["brief"]["capacity_bytes"] == "256 MiB");
  CHECK(data["facets"][1]["brief"]["capacity_bytes"] == "1 GiB");
}

// ResNet-50 at batch 256 under TensorFlow on a V100 16 GB: lines that fit (accumulation, amp,
// half the batch, inference) in both groups, and lines that do not (advise_test.cpp).
TEST_CASE("advise's fields: one name each in the CSV, Python's table and the terminal's", "[columns][advise]") {
  const std::vector<std::string> names{"rank", "fits", "group", "impact", "changes", "what", "change", "workload",
                                       "policy", "tenants", "device", "capacity_bytes", "effective_batch",
                                       "peak_allocated_bytes", "peak_reserved_bytes", "peak_device_bytes",
                                       "headroom_bytes", "allocator_time_ns", "framework", "verdict"};
  CHECK(declared_names(advise_columns()) == names);
  // The terminal's table, in its order: each of them in_table, and no other.
  std::vector<std::string> in_table;
  for (const Column<AdviseRow>& column : advise_table_columns()) in_table.emplace_back(column.name);
  CHECK(in_table == std::vector<std::string>{"rank", "peak_allocated_bytes", "peak_reserved_bytes", "headroom_bytes",
                                             "allocator_time_ns", "effective_batch", "what"});
  for (const Column<AdviseRow>& column : advise_columns()) {
    CHECK(column.in_table == (std::find(in_table.begin(), in_table.end(), column.name) != in_table.end()));
  }

  AdviseOptions options;
  options.workload = "resnet50_b256";
  options.framework = "tf";
  options.device.presets = "v100-16gb";
  options.threads = 1;
  std::ostringstream warnings;
  const AdviseResults results = run_advise(advise_study(options, warnings));
  const std::vector<AdviseRow> rows = advise_rows(results);
  REQUIRE(rows.size() == results.lines.size() + 1);

  const test::TempDir dir;
  const std::string csv = dir.file("advise.csv");
  const test::Outcome shown = test::cli({"advise", "--workload", "resnet50_b256", "--framework", "tf", "--device",
                                         "v100-16gb", "--threads", "1", "--csv", csv});
  INFO(shown.out << shown.err);
  REQUIRE(shown.status == 0);
  check_csv_and_table<AdviseRow>(advise_columns(), rows, csv, advise_table(results));

  // The terminal's table: a header of the labels, then a line per line that fits, each cell its
  // column's text; the change under it.
  const std::vector<Column<AdviseRow>> columns = advise_table_columns();
  const std::vector<std::string> out = test::lines(shown.out);
  const auto header =
      std::find_if(out.begin(), out.end(), [](const std::string& line) { return line.rfind("rank  ", 0) == 0; });
  REQUIRE(header != out.end());
  CHECK(spaced_cells(*header) ==
        std::vector<std::string>{"rank", "peak allocated", "peak reserved", "headroom", "allocator time", "eff. batch",
                                 "what changes"});
  CHECK(spaced_cells(*header) == column_labels<AdviseRow>(columns));
  std::size_t fitting = 0;
  for (const AdviseRow& row : rows) {
    if (row.rank == 0 || !row.line->fits) continue;
    INFO("line " << row.line->candidate.what);
    ++fitting;
    CHECK(row.rank == fitting);  // what fits ranks first
    const std::vector<std::string> expected = column_texts<AdviseRow>(columns, row);
    const auto line = std::find_if(header, out.end(), [&](const std::string& l) { return spaced_cells(l) == expected; });
    REQUIRE(line != out.end());
    REQUIRE(line + 1 != out.end());
    CHECK(spaced_cells(line[1]) == std::vector<std::string>{column_text(find_column(advise_columns(), "change"), row)});
  }
  CHECK(fitting >= 4);
  // Worked from the rules: accumulation keeps the effective batch (128 x 2), half the batch halves it,
  // a line's headroom is the capacity less the device at its fullest.
  for (const AdviseRow& row : rows) {
    const std::string what = column_text(find_column(advise_columns(), "what"), row);
    const std::string batch = column_text(find_column(advise_columns(), "effective_batch"), row);
    if (what == "batch 128 x 2 accumulation steps") CHECK(batch == "256");
    if (what == "half the batch") CHECK(batch == "128");
    CHECK(row.line->headroom == results.device.capacity - row.line->peak_device);
  }
  // A line that does not fit: its words and verdict, from the same columns.
  for (const AdviseRow& row : rows) {
    if (row.rank == 0 || row.line->fits || row.line->candidate.changes > 1) continue;
    const std::string what = column_text(find_column(advise_columns(), "what"), row);
    const std::string verdict = column_text(find_column(advise_columns(), "verdict"), row);
    CHECK_FALSE(verdict.empty());
    CHECK_THAT(shown.out, Catch::Contains("  " + what + " (") && Catch::Contains("): " + verdict + "\n"));
  }
}

// seed_cnn on 256 MiB under direct and caching: six searches (as given, amp, acc4 each).
TEST_CASE("maxbatch's fields: one name each in the CSV, Python's table and the terminal's sentences", "[columns][maxbatch]") {
  const std::vector<std::string> names{"workload", "device", "capacity_bytes", "context_bytes", "policy", "variant",
                                       "largest_batch", "batch_per_step", "capped", "monotone", "not_monotone_because",
                                       "peak_reserved_bytes", "peak_allocated_bytes", "fragmentation_at_peak",
                                       "fit_intercept_bytes", "fit_slope_bytes", "fit_rms_residual_bytes",
                                       "batches_tried"};
  CHECK(declared_names(maxbatch_columns()) == names);

  MaxBatchOptions options;
  options.workload = "seed_cnn";
  options.policies = {"direct,caching"};
  options.device.capacities = "256MiB";
  options.threads = 1;
  const MaxBatchResults results = run_maxbatch(maxbatch_study(options));
  REQUIRE(results.rows.size() == 6);

  const test::TempDir dir;
  const std::string csv = dir.file("maxbatch.csv");
  const test::Outcome shown = test::cli({"maxbatch", "--workload", "seed_cnn", "--policy", "direct,caching",
                                         "--capacity", "256MiB", "--threads", "1", "--csv", csv});
  INFO(shown.out << shown.err);
  REQUIRE(shown.status == 0);
  check_csv_and_table<MaxBatchRow>(maxbatch_columns(), results.rows, csv, maxbatch_table(results));

  // Each search's sentences: the device's line and its policy's lines for the search as given,
  // its own line ("  with amp: ...") for a variant.
  const std::vector<std::string> out = test::lines(shown.out);
  REQUIRE(!out.empty());
  const auto text = [](const MaxBatchRow& row, std::string_view name) {
    return column_text(find_column(maxbatch_columns(), name), row);
  };
  for (const MaxBatchRow& row : results.rows) {
    const bool as_given = row.variant.token == nullptr;
    INFO("policy " << row.policy.text << ", variant " << row.variant.name());
    std::string said;
    if (as_given) {
      auto line = std::find_if(out.begin(), out.end(), [&](const std::string& l) {
        return l.rfind("policy " + text(row, "policy") + ": ", 0) == 0;
      });
      REQUIRE(line != out.end());
      said = out.front() + "\n";  // one device: its line heads the output
      for (; line != out.end() && line->rfind("  with ", 0) != 0; ++line) said += *line + "\n";
    } else {
      // The variant's line under its policy's.
      auto policy = std::find_if(out.begin(), out.end(), [&](const std::string& l) {
        return l.rfind("policy " + text(row, "policy") + ": ", 0) == 0;
      });
      REQUIRE(policy != out.end());
      const auto line = std::find_if(policy, out.end(), [&](const std::string& l) {
        return l.rfind("  with " + text(row, "variant") + ": ", 0) == 0;
      });
      REQUIRE(line != out.end());
      said = *line + "\n";
    }
    INFO(said);
    for (const Column<MaxBatchRow>& column : maxbatch_columns()) {
      if (!column.in_table) continue;
      const std::string name(column.name);
      // A variant's line tells its answer; the search as given tells the rest (its variant is no word).
      const bool told = as_given ? name != "variant" && name != "batch_per_step"
                                 : name == "variant" || name == "largest_batch" ||
                                       (name == "batch_per_step" && row.variant.per_step > 1) ||
                                       name == "not_monotone_because";
      if (!told) continue;
      INFO("field " << name);
      const std::string shown_text = column_text(column, row);
      CHECK_THAT(said, Catch::Contains(shown_text));
      if (column.label) {  // beside its label, before it ("peak reserved 240 MiB") or after ("11 batches tried")
        const std::string label(column.label);
        CHECK_THAT(said, Catch::Contains(label + " " + shown_text) || Catch::Contains(shown_text + " " + label));
      }
    }
  }
  // Worked from the rules: accumulation's batch per step is its largest batch x 4, and the fit's
  // figures are in MiB to a tenth.
  for (const MaxBatchRow& row : results.rows) {
    if (!row.found.largest) continue;
    CHECK(text(row, "batch_per_step") == std::to_string(*row.found.largest * row.variant.per_step));
    const auto line = fit_peak(row.found.probes, &BatchProbe::peak_allocated);
    REQUIRE(line);
    char mib[32];
    std::snprintf(mib, sizeof mib, "%.1f MiB", line->slope / 1048576.0);
    CHECK(text(row, "fit_slope_bytes") == mib);
  }
}

// The RMM log of tests/data/rmm_pool_oom.dev0.csv asks 512, 256, 600 (logged as failed) and
// 400 MiB; on 64 MiB every request fails: 4 OOMs, the log's one failure among them, 3 where
// the log succeeded, nothing allocated.
TEST_CASE("replay of a log: each field of its table under the run metric's name in --csv", "[columns][replay]") {
  const test::TempDir dir;
  const std::string csv = dir.file("log.csv");
  const std::string log = std::string(ALLOCSIM_TEST_DATA) + "/rmm_pool_oom.dev0.csv";
  const test::Outcome shown = test::cli({"replay", log, "--capacity", "64MiB", "--policy", "rmm-pool,bfc", "--csv", csv});
  INFO(shown.out << shown.err);
  REQUIRE(shown.status == 0);
  const LogReplay replay = replay_log_file(log, std::vector<PolicyMaker>{policy_maker("rmm-pool"), policy_maker("bfc")},
                                           [] {
                                             DeviceSpec device;
                                             device.capacity = 64_MiB;
                                             return device;
                                           }());
  const std::vector<LogReplayRow> rows = log_replay_rows(replay);
  REQUIRE(rows.size() == 2);
  const std::vector<std::string> csv_lines = test::lines(test::read_file(csv));
  REQUIRE(csv_lines.size() == 3);
  const std::vector<std::string> header = csv_cells(csv_lines[0]);
  for (const Column<LogReplayRow>& column : log_replay_columns()) {
    const std::string name(column.name);
    INFO("field " << name);
    const auto at = std::find(header.begin(), header.end(), name);
    CHECK((at != header.end()) == column.in_csv);
    std::vector<std::string> expected;
    for (std::size_t side = 0; side < rows.size(); ++side) {
      if (column.in_csv && at != header.end()) {
        CHECK(csv_cells(csv_lines[side + 1]).at(static_cast<std::size_t>(at - header.begin())) ==
              format_plain(column.get(rows[side])));
      }
      expected.push_back(column_text(column, rows[side]));
    }
    REQUIRE(column.in_table);
    CHECK(table_cells(shown.out, std::string(column_label(column))) == expected);
  }
  CHECK(table_cells(shown.out, "OOMs") == std::vector<std::string>{"4", "4"});
  CHECK(table_cells(shown.out, "log's failures failed too") == std::vector<std::string>{"1 of 1", "1 of 1"});
  CHECK(table_cells(shown.out, "OOMs where the log succeeded") == std::vector<std::string>{"3", "3"});
  CHECK(table_cells(shown.out, "peak allocated") == std::vector<std::string>{"0 B", "0 B"});
}

}  // namespace
}  // namespace allocsim
