// The report's HTML template, style and script, built into the binary from studies/report/
// (CMake embeds them, so the binary makes reports from any folder).
#pragma once

#include <string_view>

namespace allocsim {

std::string_view report_template();  // studies/report/template.html
std::string_view report_style();     // studies/report/report.css
std::string_view report_script();    // studies/report/report.js

}  // namespace allocsim
