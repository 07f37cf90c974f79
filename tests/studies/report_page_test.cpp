// The HTML page around a report's data: filled once, nothing that could end a script
// early, D3 from its Debian path or a clear error.
#include <catch2/catch.hpp>

#include "sim/error.hpp"
#include "studies/report_page.hpp"

namespace allocsim {
namespace {

TEST_CASE("a report page inlines the library, the script and the data, and escapes what could break out", "[report]") {
  const std::string page = report_page("a <b> & c", R"({"kind":"run","note":"</script><!--"})", "var d3={version:'x'};");
  CHECK(page.find("var d3={version:'x'};") != std::string::npos);
  CHECK(page.find("<title>a &lt;b&gt; &amp; c</title>") != std::string::npos);
  CHECK(page.find(R"("note":"\u003c/script>\u003c!--")") != std::string::npos);
  CHECK(page.find("/*@") == std::string::npos);  // every placeholder filled
  CHECK(page.find("@TITLE@") == std::string::npos);
  CHECK(page.find("default-src 'none'") != std::string::npos);
  CHECK(page.find("http://") == std::string::npos);
  CHECK(page.find("https://") == std::string::npos);
  // Only the page's own </script> tags: one per script element.
  std::size_t closing = 0;
  for (std::size_t at = page.find("</script>"); at != std::string::npos; at = page.find("</script>", at + 1)) ++closing;
  CHECK(closing == 4);
}

TEST_CASE("a library that would end its script element is refused", "[report]") {
  CHECK_THROWS_WITH(report_page("t", "{}", "var s='</SCRIPT>';"), Catch::Contains("cannot be inlined"));
}

TEST_CASE("a missing plotting library names its path and the package", "[report]") {
  CHECK_THROWS_WITH(write_report_page("never-written.html", "t", "{}", "/nonexistent/d3.min.js"),
                    Catch::Contains("/nonexistent/d3.min.js") && Catch::Contains("libjs-d3"));
}

TEST_CASE("the command a page shows quotes what a shell would split", "[report]") {
  const std::vector<std::string> line{"allocsim", "run", "--workload", "a b", "--policy", "it's"};
  CHECK(command_text(line) == R"(run --workload 'a b' --policy 'it'\''s')");
}

}  // namespace
}  // namespace allocsim
