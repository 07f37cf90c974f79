// A self-contained HTML report: one file that opens offline and asks the network for
// nothing. The page is studies/report/template.html with report.css and report.js (built
// into the binary), D3 read from Debian's libjs-d3 and inlined, and the page's data as one
// JSON blob that report.js draws. A Content-Security-Policy of `default-src 'none'` keeps any
// request from leaving the page.
#pragma once

#include <filesystem>
#include <span>
#include <string>
#include <string_view>

namespace allocsim {

// Debian's libjs-d3 (D3 v3), which tools/setup installs.
inline constexpr std::string_view kDebianD3 = "/usr/share/javascript/d3/d3.min.js";

// The page: `data` (a JSON document) inlined, `title` escaped, `d3` the library's source.
std::string report_page(std::string_view title, std::string_view data, std::string_view d3);

// Reads D3 from `d3_path` (Error naming it and the package when missing), then writes the
// page to `file` whole or not at all (sim/atomic_file).
void write_report_page(const std::filesystem::path& file, std::string_view title, std::string_view data,
                       const std::filesystem::path& d3_path = kDebianD3);

// The command line that made a page, as the page shows it: the arguments after the program
// name, joined by spaces, those with a space or quote in single quotes.
std::string command_text(std::span<const std::string> command_line);

}  // namespace allocsim
