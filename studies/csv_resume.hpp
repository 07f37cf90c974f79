// Reading back a CSV that allocsim itself wrote, for --resume (sweep, maxbatch): RFC 4180
// records, and the header checked against the one this command would write, so a file of
// another command or layout is refused before anything runs.
#pragma once

#include <istream>
#include <span>
#include <string>
#include <vector>

namespace allocsim {

// The cells as one CSV line (quoted where RFC 4180 needs it), without its line break.
std::string join_csv(std::span<const std::string> cells);

// One RFC 4180 record. False at the end of the input; `complete` is false for a last
// record that no line break ends (a file cut while it was written).
bool read_csv_record(std::istream& in, std::vector<std::string>& cells, bool& complete);

// Reads the header into `header`. False when nothing is done yet: the file is empty, or
// cut inside a header that begins like `expected`. Throws Error(`refusal`) when the header
// is not `expected` (with `more_columns`, `expected` followed by any others).
bool read_resume_header(std::istream& in, std::span<const std::string> expected, bool more_columns,
                        std::vector<std::string>& header, const std::string& refusal);

}  // namespace allocsim
