#include "studies/report_page.hpp"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <sstream>

#include "sim/atomic_file.hpp"
#include "sim/error.hpp"
#include "studies/report_assets.hpp"

namespace allocsim {
namespace {

std::string escape_html(std::string_view text) {
  std::string out;
  for (const char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

// Inside <script>, "</script" would end the element early and "<!--" change how it is
// parsed. JSON escapes every '<' (it appears in strings only); a script holding either is
// refused rather than altered.
std::string inline_json(std::string_view json) {
  std::string out;
  out.reserve(json.size());
  for (const char c : json) {
    if (c == '<') {
      out += "\\u003c";
    } else {
      out += c;
    }
  }
  return out;
}

std::string inline_script(std::string_view source, std::string_view what) {
  std::string lower(source);
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (lower.find("</script") != std::string::npos || lower.find("<!--") != std::string::npos) {
    throw Error("--report: " + std::string(what) + " holds </script or <!--, which cannot be inlined in a page");
  }
  return std::string(source);
}

}  // namespace

std::string report_page(std::string_view title, std::string_view data, std::string_view d3) {
  const std::string_view page = report_template();
  const std::pair<std::string_view, std::string> fills[] = {
      {"@TITLE@", escape_html(title)},
      {"/*@REPORT_CSS@*/", std::string(report_style())},
      {"/*@D3@*/", inline_script(d3, "the plotting library")},
      {"/*@REPORT_JS@*/", inline_script(report_script(), "report.js")},
      {"/*@DATA@*/", inline_json(data)},
  };
  std::string out;
  std::size_t at = 0;
  while (at < page.size()) {
    std::size_t next = std::string_view::npos;
    const std::pair<std::string_view, std::string>* fill = nullptr;
    for (const auto& candidate : fills) {
      const std::size_t found = page.find(candidate.first, at);
      if (found < next) {
        next = found;
        fill = &candidate;
      }
    }
    if (!fill) {
      out.append(page.substr(at));
      break;
    }
    out.append(page.substr(at, next - at)).append(fill->second);
    at = next + fill->first.size();
  }
  return out;
}

void write_report_page(const std::filesystem::path& file, std::string_view title, std::string_view data,
                       const std::filesystem::path& d3_path) {
  std::ifstream in(d3_path, std::ios::binary);
  if (!in) {
    throw Error("--report: the plotting library " + d3_path.string() +
                " is missing; install Debian's libjs-d3 (tools/setup does)");
  }
  std::ostringstream d3;
  d3 << in.rdbuf();
  const std::string page = report_page(title, data, d3.str());
  write_file_atomically(file, [&](std::ostream& out) { out << page; });
}

std::string command_text(std::span<const std::string> command_line) {
  std::string text;
  for (std::size_t i = 1; i < command_line.size(); ++i) {
    const std::string& arg = command_line[i];
    if (!text.empty()) text += ' ';
    if (arg.find_first_of(" '\"") == std::string::npos && !arg.empty()) {
      text += arg;
      continue;
    }
    text += '\'';
    for (const char c : arg) text += c == '\'' ? std::string("'\\''") : std::string(1, c);
    text += '\'';
  }
  return text;
}

}  // namespace allocsim
