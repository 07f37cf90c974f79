// Input a user types, read one way everywhere (issue 14): a policy list split as one spec
// parses, the frameworks' own spellings, conflicts and impossible values refused with a
// line that says why, --version, and JSON that says what made it.
#include <filesystem>
#include <sstream>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "cli_driver.hpp"

namespace allocsim {
namespace {

namespace fs = std::filesystem;
using namespace test;

// The cells of one CSV line without quotes: enough for the columns compared here.
std::vector<std::string> cells(const std::string& line) {
  std::vector<std::string> out(1);
  bool quoted = false;
  for (const char c : line) {
    if (c == '"') {
      quoted = !quoted;
    } else if (c == ',' && !quoted) {
      out.emplace_back();
    } else {
      out.back() += c;
    }
  }
  return out;
}

std::string column(const std::vector<std::string>& csv, std::size_t row, const std::string& name) {
  const std::vector<std::string> header = cells(csv.front());
  const auto at = std::find(header.begin(), header.end(), name);
  REQUIRE(at != header.end());
  return cells(csv.at(row)).at(static_cast<std::size_t>(at - header.begin()));
}

void refused(const std::vector<std::string>& args, const std::string& message) {
  const Outcome outcome = cli(args);
  INFO(outcome.err);
  CHECK(outcome.status == 2);
  CHECK(one_line(outcome.err));
  CHECK_THAT(outcome.err, Catch::Contains(message));
}

TEST_CASE("input: sweep --policy splits a list the way run parses one spec", "[cli][input]") {
  // conf= values hold ':' and ',' sits inside brackets: each is one policy, three points.
  const Outcome sweep = cli({"sweep", "--workload", "random:n=3000,live=1GiB", "--quiet", "--policy",
                             "caching:conf=max_split_size_mb:128,caching:roundup_power2_divisions=[256:1,>:4],direct"});
  INFO(sweep.err);
  REQUIRE(sweep.status == 0);
  const std::vector<std::string> csv = lines(sweep.out);
  REQUIRE(csv.size() == 1 + 3);
  CHECK(column(csv, 1, "policy") == "caching:conf=max_split_size_mb:128");
  CHECK(column(csv, 2, "policy") == "caching:roundup_power2_divisions=[256:1,>:4]");
  CHECK(column(csv, 3, "policy") == "direct");
}

TEST_CASE("input: the frameworks' own spellings are aliases, in their units", "[cli][input]") {
  // PyTorch's max_split_size_mb=128 is max_split_size=128MiB and the conf string's setting.
  const Outcome caching = cli({"sweep", "--workload", "random:n=3000,live=1GiB,seed=3", "--quiet", "--policy",
                               "caching:max_split_size_mb=128,caching:max_split_size=128MiB,caching:conf=max_split_size_mb:128,"
                               "expandable:expandable_segments=True,caching:garbage_collection_threshold=0.8,fraction=0.5"});
  INFO(caching.err);
  REQUIRE(caching.status == 0);
  const std::vector<std::string> csv = lines(caching.out);
  REQUIRE(csv.size() == 1 + 5);
  for (const std::string metric : {"peak_reserved_bytes", "device_mallocs", "fragmentation_at_peak"}) {
    CHECK(column(csv, 1, metric) == column(csv, 2, metric));
    CHECK(column(csv, 1, metric) == column(csv, 3, metric));
  }
  // TensorFlow's memory_limit counts MB.
  const Outcome bfc = cli({"sweep", "--workload", "random:n=100", "--quiet", "--capacity", "16GiB", "--policy",
                           "bfc:memory_limit_mb=4096,bfc:limit=4GiB"});
  REQUIRE(bfc.status == 0);
  const std::vector<std::string> limits = lines(bfc.out);
  CHECK(column(limits, 1, "bytes_limit") == std::to_string(4ull << 30));
  CHECK(column(limits, 2, "bytes_limit") == std::to_string(4ull << 30));
  // A bare limit below 1 MiB is TensorFlow's MB written as bytes; limit=0 leaves nothing.
  refused({"--workload", "random:n=10", "--policy", "bfc:limit=4096"}, "limit=4096MiB");
  refused({"--workload", "random:n=10", "--policy", "bfc:limit=4096"}, "memory_limit_mb=4096");
  refused({"--workload", "random:n=10", "--policy", "bfc:limit=0"}, "limit=0 leaves no memory");
  CHECK(cli({"--workload", "random:n=10", "--policy", "bfc:limit=4096KiB"}).status == 0);  // a unit says it is meant
  refused({"--workload", "random:n=10", "--policy", "caching:max_split_size=256MiB,max_split_size_mb=128"}, "given twice");
  // `allocsim policies` names the native spellings beside ours.
  CHECK_THAT(cli({"policies"}).out, Catch::Contains("(also max_split_size_mb, in MiB)") &&
                                        Catch::Contains("(also garbage_collection_threshold)") &&
                                        Catch::Contains("(also memory_limit_mb, in MiB)"));
}

TEST_CASE("input: conflicting tokens and impossible values are refused with the reason", "[cli][input]") {
  refused({"--workload", "resnet50_b64_b128", "--policy", "bfc"}, "'b64' and 'b128' both set the batch");
  refused({"--workload", "resnet50_amp_fp32", "--policy", "bfc"}, "'amp' and 'fp32' both set the precision");
  refused({"--workload", "random:n=10,n=20", "--policy", "bfc"}, "n is given twice");
  refused({"--workload", "random:n=10", "--policy", "direct", "--granularity", "3MiB"}, "--granularity 3MiB is not a power of two");
  refused({"sweep", "--workload", "random:n=10", "--policy", "direct", "--granularity", "1000"}, "not a power of two");
  CHECK(cli({"--workload", "random:n=10", "--policy", "direct", "--granularity", "2MiB"}).status == 0);
  refused({"sweep", "--workload", "random:n=10", "--policy", "direct", "--threads=-1"}, "--threads -1 is negative");
  refused({"maxbatch", "--workload", "seed_cnn", "--policy", "direct", "--threads=-1"}, "--threads -1 is negative");
  refused({"--workload", "random:n=10", "--policy", "direct", "--capacity=-16GiB"}, "negative");
  // A sweep's --param replaces the workload's own key rather than giving it twice.
  const Outcome swept = cli({"sweep", "--workload", "random:n=10,seed=4", "--param", "seed=1,2", "--policy", "direct", "--quiet"});
  INFO(swept.err);
  CHECK(swept.status == 0);
  CHECK_THAT(swept.out, Catch::Contains("random:n=10,seed=1") && Catch::Contains("random:n=10,seed=2"));
}

TEST_CASE("input: --resume refuses a file that is not a CSV of this sweep, and leaves it", "[cli][input]") {
  const TempDir dir;
  const std::vector<std::string> sweep{"sweep", "--workload", "random:n=10", "--policy", "direct", "--quiet", "--resume"};
  for (const std::string text : {"time_ns,op,id,bytes\n0,alloc,a,1\n", "notes without a line break", "point,batch"}) {
    INFO(text);
    const std::string file = dir.file("other.csv", text);
    std::vector<std::string> args = sweep;
    args.insert(args.end(), {"--csv", file});
    const Outcome outcome = cli(args);
    CHECK(outcome.status == 2);
    CHECK_THAT(outcome.err, Catch::Contains("not written by this kind of sweep"));
    CHECK(read_file(file) == text);
  }
  // The start of this sweep's own header (a run cut while writing it) is nothing done.
  const std::string cut = dir.file("cut.csv", "point,mo");
  std::vector<std::string> args = sweep;
  args.insert(args.end(), {"--csv", cut});
  CHECK(cli(args).status == 0);
}

TEST_CASE("input: --version, and JSON outputs say which version and command line made them", "[cli][input]") {
  const Outcome version = cli({"--version"});
  CHECK(version.status == 0);
  CHECK_THAT(version.out, Catch::Matches("allocsim [0-9]+\\.[0-9]+(\\.[0-9]+)?\n"));
  CHECK_THAT(cli({"--help"}).out, Catch::Contains("--version"));
  const TempDir dir;
  const std::string json = dir.file("run.json");
  const std::vector<std::string> args{"--workload", "random:n=10", "--policy", "direct", "--json", json};
  REQUIRE(cli(args).status == 0);
  const nlohmann::json document = nlohmann::json::parse(read_file(json));
  CHECK("allocsim " + document["allocsim"]["version"].get<std::string>() + "\n" == version.out);
  std::vector<std::string> expected{"allocsim"};
  expected.insert(expected.end(), args.begin(), args.end());
  CHECK(document["allocsim"]["command_line"].get<std::vector<std::string>>() == expected);
}

// What a command line lacks, or the options a run checks first, are named before a bad
// --policy is read: the policy is read last, once.
TEST_CASE("input: a missing option and the cheap checks come before a bad --policy", "[cli][input]") {
  const auto first_error = [](std::vector<std::string> args) {
    const Outcome outcome = cli(std::move(args));
    CHECK(outcome.status != 0);
    return outcome.err;
  };
  CHECK_THAT(first_error({"--policy", "nosuch"}), Catch::Contains("--policy needs a --workload to replay"));
  CHECK_THAT(first_error({"--workload", "random:n=10", "--policy", "nosuch", "--on-oom", "x"}),
             Catch::Contains("--on-oom"));
  CHECK_THAT(first_error({"--workload", "random:n=10", "--policy", "nosuch"}), Catch::Contains("unknown policy 'nosuch'"));
  CHECK_THAT(first_error({"validate", "--policy", "nosuch"}), Catch::Contains("validate needs --workload and --policy"));
  CHECK_THAT(first_error({"validate", "--workload", "random:n=10", "--policy", "nosuch", "--segments", "x"}),
             Catch::Contains("--segments x is not malloc or vmm"));
}

}  // namespace
}  // namespace allocsim
