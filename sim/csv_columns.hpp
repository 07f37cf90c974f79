// One way every CSV of allocsim is written: a table of columns {name, unit, help, getter}
// over some row type, the header their names, each cell format_plain'ed and quoted where
// RFC 4180 needs it. The run metrics (metrics.hpp) are such a table over tenants; a study
// with rows of its own (maxbatch) declares its table the same way.
#pragma once

#include <ostream>
#include <span>
#include <string_view>

#include "sim/metrics.hpp"
#include "sim/report.hpp"

namespace allocsim {

template <typename Row>
struct Column {
  std::string_view name;
  Unit unit;
  std::string_view help;
  MetricValue (*get)(const Row& row);
};

template <typename Row>
void write_csv_header(std::ostream& out, std::span<const Column<Row>> columns) {
  for (std::size_t c = 0; c < columns.size(); ++c) out << (c > 0 ? "," : "") << columns[c].name;
  out << '\n';
}

template <typename Row>
void write_csv_row(std::ostream& out, std::span<const Column<Row>> columns, const Row& row) {
  for (std::size_t c = 0; c < columns.size(); ++c) {
    out << (c > 0 ? "," : "") << csv_field(format_plain(columns[c].get(row)));
  }
  out << '\n';
}

template <typename Row>
void write_csv_columns(std::ostream& out, std::span<const Column<Row>> columns, std::span<const Row> rows) {
  write_csv_header(out, columns);
  for (const Row& row : rows) write_csv_row(out, columns, row);
}

}  // namespace allocsim
