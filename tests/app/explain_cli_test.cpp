// allocsim explain as a user meets it: the message as an argument, a file or standard input,
// --json, --help, and exit status 2 with what is missing when the text is too short.
#include <sstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "app/commands.hpp"
#include "cli_driver.hpp"

namespace allocsim {
namespace {

using namespace test;

constexpr const char* kMessage =
    "[rank2]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 512.00 MiB. GPU 0 has a total capacity of "
    "23.65 GiB of which 210.44 MiB is free. Including non-PyTorch memory, this process has 23.43 GiB memory in use. Of "
    "the allocated memory 21.90 GiB is allocated by PyTorch, and 1.03 GiB is reserved by PyTorch but unallocated.\n";

Outcome explain_with_input(std::vector<std::string> args, const std::string& input) {
  std::istringstream in(input);
  std::ostringstream out;
  const int status = explain_command(args, out, in);
  return {status, out.str(), ""};
}

TEST_CASE("explain cli: --help teaches what it reads, examples and exit codes", "[explain][cli]") {
  const Outcome help = cli({"explain", "--help"});
  CHECK(help.status == 0);
  CHECK_THAT(help.out, Catch::Contains("reserved in total by PyTorch") && Catch::Contains("ran out of memory trying to allocate") &&
                           Catch::Contains("Examples:") && Catch::Contains("Exit status:") && Catch::Contains("--json"));
  CHECK_THAT(cli({"--help"}).out, Catch::Contains("allocsim explain"));
}

TEST_CASE("explain cli: the message as one argument, as words, and in a file", "[explain][cli]") {
  const Outcome argument = cli({"explain", kMessage});
  INFO(argument.err);
  CHECK(argument.status == 0);
  CHECK_THAT(argument.out, Catch::StartsWith("kind: fragmentation\n") && Catch::Contains("0.51 GiB"));
  std::vector<std::string> words{"explain"};
  std::istringstream split(kMessage);
  for (std::string word; split >> word;) words.push_back(word);
  CHECK(cli(words).out == argument.out);
  TempDir dir;
  const Outcome file = cli({"explain", dir.file("oom.txt", kMessage)});
  CHECK(file.status == 0);
  CHECK(file.out == argument.out);
}

TEST_CASE("explain cli: standard input, with - or no argument", "[explain][cli]") {
  const Outcome dash = explain_with_input({"-"}, kMessage);
  CHECK(dash.status == 0);
  CHECK_THAT(dash.out, Catch::StartsWith("kind: fragmentation\n"));
  CHECK(explain_with_input({}, kMessage).out == dash.out);
}

TEST_CASE("explain cli: --json is the same answer as one object", "[explain][cli]") {
  const Outcome json = explain_with_input({"--json"}, kMessage);
  CHECK(json.status == 0);
  const auto document = nlohmann::json::parse(json.out);
  CHECK(document["kind"] == "fragmentation");
  CHECK(document["certain"] == true);
  CHECK(document["source"] == "pytorch");
  CHECK(document["figures"]["request"]["bytes"] == 512 * 1024 * 1024);
  CHECK(document["figures"]["outside"]["text"] == "0.51 GiB");
  CHECK(document["try"][0] == "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True");
  CHECK(document["missing"].empty());
}

TEST_CASE("explain cli: too little text exits 2 with what was read and what is missing", "[explain][cli]") {
  const Outcome part = explain_with_input({}, "RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 3.95 GiB total capacity;");
  CHECK(part.status == 2);
  CHECK_THAT(part.out, Catch::StartsWith("kind: undecided\n") && Catch::Contains("request:") &&
                           Catch::Contains("missing: the device's free bytes"));
  const Outcome json = explain_with_input({"--json"}, "nothing here");
  CHECK(json.status == 2);
  const auto document = nlohmann::json::parse(json.out);
  CHECK(document["kind"].is_null());
  CHECK(document["missing"].size() == 1);
}

TEST_CASE("explain cli: a missing file is bad input, one line", "[explain][cli]") {
  const Outcome missing = cli({"explain", "no-such-oom.txt"});
  CHECK(missing.status == 2);
  CHECK(one_line(missing.err));
  CHECK_THAT(missing.err, Catch::Contains("no-such-oom.txt: no such file"));
}

TEST_CASE("explain cli: a directory is bad input that says it is a directory", "[explain][cli]") {
  TempDir dir;
  const Outcome outcome = cli({"explain", dir.path.string()});
  CHECK(outcome.status == 2);
  CHECK(one_line(outcome.err));
  CHECK_THAT(outcome.err, Catch::Contains(dir.path.string() + ": is a directory") && !Catch::Contains("no such file"));
}

TEST_CASE("explain cli: `inconsistent` is a verdict: exit 0, and the JSON names it", "[explain][cli]") {
  // F = 2 GiB alone holds a 1 GiB request's segment.
  const Outcome json = explain_with_input(
      {"--json"}, "CUDA out of memory. Tried to allocate 1.00 GiB. GPU 0 has a total capacity of 16.00 GiB of which 2.00 GiB "
                  "is free. Of the allocated memory 13.00 GiB is allocated by PyTorch, and 512.00 MiB is reserved by PyTorch "
                  "but unallocated.");
  CHECK(json.status == 0);
  const auto document = nlohmann::json::parse(json.out);
  CHECK(document["kind"] == "inconsistent");
  CHECK(document["figures"]["device_free"]["bytes"] == 2ULL << 30);
}

}  // namespace
}  // namespace allocsim
