#include "studies/csv_resume.hpp"

#include <algorithm>

#include "sim/error.hpp"
#include "sim/report.hpp"

namespace allocsim {

std::string join_csv(std::span<const std::string> cells) {
  std::string line;
  for (std::size_t i = 0; i < cells.size(); ++i) {
    if (i > 0) line += ',';
    line += csv_field(cells[i]);
  }
  return line;
}

bool read_csv_record(std::istream& in, std::vector<std::string>& cells, bool& complete) {
  cells.assign(1, "");
  bool quoted = false;
  bool any = false;
  for (int c = in.get(); c != std::char_traits<char>::eof(); c = in.get()) {
    any = true;
    if (quoted) {
      if (c != '"') {
        cells.back() += static_cast<char>(c);
      } else if (in.peek() == '"') {
        cells.back() += static_cast<char>(in.get());
      } else {
        quoted = false;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      cells.emplace_back();
    } else if (c == '\n') {
      complete = true;
      return true;
    } else {
      cells.back() += static_cast<char>(c);
    }
  }
  complete = false;
  return any;
}

bool read_resume_header(std::istream& in, std::span<const std::string> expected, bool more_columns,
                        std::vector<std::string>& header, const std::string& refusal) {
  bool complete = false;
  if (!read_csv_record(in, header, complete)) return false;  // empty: nothing done
  if (!complete) {  // cut in its header: nothing done, if it is the start of this header
    const std::string cut = join_csv(header);
    const std::string whole = join_csv(expected);
    if (whole.starts_with(cut) || (more_columns && cut.starts_with(whole))) return false;
  }
  if (!complete || header.size() < expected.size() || (!more_columns && header.size() != expected.size()) ||
      !std::equal(expected.begin(), expected.end(), header.begin())) {
    throw Error(refusal);
  }
  return true;
}

}  // namespace allocsim
