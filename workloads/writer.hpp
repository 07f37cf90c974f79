// A trace writer, one row of the catalogue's writer table (workloads/catalogue.cpp), chosen
// by the output's extension: `allocsim trace convert` and `trace slice` write through it.
// Adding a format is its write function and one row.
#pragma once

#include <filesystem>
#include <string_view>

#include "sim/trace.hpp"

namespace allocsim {

struct WriterInfo {
  std::string_view name;
  std::string_view extension;  // with its dot: ".csv"; the longest that ends a path wins
  std::string_view summary;    // what the format keeps and what it loses
  // Contract: writes atomically (a temporary file, then a rename), so a failure leaves any
  // file at `path` as it was; throws Error naming the path.
  void (*write)(const Trace& trace, const std::filesystem::path& path);
};

}  // namespace allocsim
