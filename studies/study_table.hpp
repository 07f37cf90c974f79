// A study's rows as its CSV holds them: the header, then each row's cells (unquoted, as
// format_plain writes them), in the CSV's order. The command line writes it as CSV; the
// Python package makes a DataFrame of the same cells, with no file in between.
#pragma once

#include <ostream>
#include <span>
#include <string>
#include <vector>

#include "sim/csv_columns.hpp"
#include "sim/metrics.hpp"
#include "studies/csv_resume.hpp"

namespace allocsim {

struct StudyTable {
  std::vector<std::string> columns;
  std::vector<std::vector<std::string>> rows;  // each as long as `columns`
};

inline void write_study_csv(std::ostream& out, const StudyTable& table) {
  out << join_csv(table.columns) << '\n';
  for (const std::vector<std::string>& cells : table.rows) out << join_csv(cells) << '\n';
}

// The cells of one row of a column table (sim/csv_columns.hpp).
template <typename Row>
std::vector<std::string> table_cells(std::span<const Column<Row>> columns, const Row& row) {
  std::vector<std::string> cells;
  cells.reserve(columns.size());
  for (const Column<Row>& column : columns) cells.push_back(format_plain(column.get(row)));
  return cells;
}

}  // namespace allocsim
