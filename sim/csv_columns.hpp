// One way every table of results is written: a table of columns {name, unit, help, getter}
// over some row type, each declared once. The CSV header is their names and each cell
// format_plain'ed (quoted where RFC 4180 needs it); JSON objects (--json, the page's, the
// Python dicts) key each value by the same name, integers as numbers; the terminal's table
// shows each through the column's one formatter for people. The run metrics (metrics.hpp)
// are such a table over tenants; a study with rows of its own (maxbatch, replay's what-if)
// declares its table the same way.
#pragma once

#include <algorithm>
#include <ostream>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/metrics.hpp"
#include "sim/report.hpp"

namespace allocsim {

// A value as JSON: text, an integer (bytes and counts exact), a real, or null for none.
inline nlohmann::json metric_json(const MetricValue& value) {
  if (const auto* text = std::get_if<std::string>(&value)) return *text;
  if (const auto* integer = std::get_if<std::uint64_t>(&value)) return *integer;
  if (const auto* real = std::get_if<double>(&value)) return *real;
  return nullptr;
}

template <typename Row>
struct Column {
  std::string_view name;  // the CSV column, the JSON key, the Python key: the field's one name
  Unit unit;
  std::string_view help;
  MetricValue (*get)(const Row& row);
  // For people (the terminal's table, the page's cells): none means format_human(get(row), unit).
  std::string (*shown)(const Row& row) = nullptr;
  // The caption of its row in the terminal's table, where a sentence reads better than the
  // name (none: the name).
  const char* label = nullptr;
  bool in_csv = true;    // false: a field for people and the JSON that the CSV has never had
  bool in_table = true;  // false: not a row of the terminal's table (said beside it, or not at all)
};

template <typename Row>
std::string column_text(const Column<Row>& column, const Row& row) {
  return column.shown ? column.shown(row) : format_human(column.get(row), column.unit);
}

template <typename Row>
std::string_view column_label(const Column<Row>& column) {
  return column.label ? std::string_view(column.label) : column.name;
}

template <typename Row>
void write_csv_header(std::ostream& out, std::span<const Column<Row>> columns) {
  bool first = true;
  for (const Column<Row>& column : columns) {
    if (!column.in_csv) continue;
    out << (first ? "" : ",") << column.name;
    first = false;
  }
  out << '\n';
}

template <typename Row>
void write_csv_row(std::ostream& out, std::span<const Column<Row>> columns, const Row& row) {
  bool first = true;
  for (const Column<Row>& column : columns) {
    if (!column.in_csv) continue;
    out << (first ? "" : ",") << csv_field(format_plain(column.get(row)));
    first = false;
  }
  out << '\n';
}

template <typename Row>
void write_csv_columns(std::ostream& out, std::span<const Column<Row>> columns, std::span<const Row> rows) {
  write_csv_header(out, columns);
  for (const Row& row : rows) write_csv_row(out, columns, row);
}

// {name: value} over every column (none as null); under "text" {name: what a person reads},
// the terminal's cell; under "brief" the same in format_human's short form, where a cell is
// narrow ("6.74 GiB" where the terminal says "6.74 GiB (7235174400 B)").
template <typename Row>
nlohmann::json columns_json(std::span<const Column<Row>> columns, const Row& row) {
  nlohmann::json object = nlohmann::json::object();
  nlohmann::json text = nlohmann::json::object();
  nlohmann::json brief = nlohmann::json::object();
  for (const Column<Row>& column : columns) {
    const MetricValue value = column.get(row);
    object[std::string(column.name)] = metric_json(value);
    text[std::string(column.name)] = column_text(column, row);
    brief[std::string(column.name)] = format_human(value, column.unit);
  }
  object["text"] = std::move(text);
  object["brief"] = std::move(brief);
  return object;
}

// A tenant's run metrics (metrics.hpp) in columns_json's shape: {name: value} over each metric
// `keep(metric)` keeps, and under "text" and "brief" each as the terminal's table shows it (a
// metric has one formatter, format_human, so the two agree). A --report page keeps all but the
// wall-clock ones (is_wall_clock): its bytes are the same on every run of the same inputs.
template <typename Keep>
nlohmann::json metrics_json(const RunResult& run, const TenantResult& tenant, Keep keep) {
  nlohmann::json object = nlohmann::json::object();
  nlohmann::json text = nlohmann::json::object();
  for (const Metric& metric : metrics()) {
    if (!keep(metric)) continue;
    const MetricValue value = metric.get(run, tenant);
    object[std::string(metric.name)] = metric_json(value);
    text[std::string(metric.name)] = format_human(value, metric.unit);
  }
  object["brief"] = text;
  object["text"] = std::move(text);
  return object;
}

// What each column is, for a page to caption what it shows: [{name, label, help}] in order.
template <typename Row>
nlohmann::json columns_legend(std::span<const Column<Row>> columns) {
  nlohmann::json legend = nlohmann::json::array();
  for (const Column<Row>& column : columns) {
    legend.push_back({{"name", column.name}, {"label", column_label(column)}, {"help", column.help}});
  }
  return legend;
}

// The terminal's table, a row per column in the table and a cell per row of results after
// its label; the first column's row heads the table.
template <typename Row>
std::vector<std::vector<std::string>> column_table(std::span<const Column<Row>> columns, std::span<const Row> rows) {
  std::vector<std::vector<std::string>> table;
  for (const Column<Row>& column : columns) {
    if (!column.in_table) continue;
    std::vector<std::string> cells{std::string(column_label(column))};
    for (const Row& row : rows) cells.push_back(column_text(column, row));
    table.push_back(std::move(cells));
  }
  return table;
}

// The column named `name`: a caller's own table, so none is a mistake in the code (logic_error).
template <typename Row>
const Column<Row>& find_column(std::span<const Column<Row>> columns, std::string_view name) {
  const auto found = std::find_if(columns.begin(), columns.end(), [&](const Column<Row>& c) { return c.name == name; });
  if (found == columns.end()) throw std::logic_error("no column " + std::string(name));
  return *found;
}

// The columns of a terminal table with a row per result, in the order `names` gives them
// (a table that reads in another order than the CSV). They are the columns in the table
// (in_table), each named once: logic_error otherwise, so the table and the flags agree.
template <typename Row>
std::vector<Column<Row>> table_columns(std::span<const Column<Row>> columns, std::span<const std::string_view> names) {
  std::vector<Column<Row>> picked;
  for (const std::string_view name : names) {
    const Column<Row>& column = find_column(columns, name);
    if (!column.in_table) throw std::logic_error("column " + std::string(name) + " is not in the table");
    picked.push_back(column);
  }
  const auto in_table = std::count_if(columns.begin(), columns.end(), [](const Column<Row>& c) { return c.in_table; });
  if (static_cast<std::size_t>(in_table) != picked.size()) throw std::logic_error("a column in the table is not named");
  return picked;
}

// Such a table's header (each column's label) and a row's cells (each column's text).
template <typename Row>
std::vector<std::string> column_labels(std::span<const Column<Row>> columns) {
  std::vector<std::string> labels;
  for (const Column<Row>& column : columns) labels.emplace_back(column_label(column));
  return labels;
}

template <typename Row>
std::vector<std::string> column_texts(std::span<const Column<Row>> columns, const Row& row) {
  std::vector<std::string> texts;
  for (const Column<Row>& column : columns) texts.push_back(column_text(column, row));
  return texts;
}

}  // namespace allocsim
