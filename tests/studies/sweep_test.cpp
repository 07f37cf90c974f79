// allocsim sweep: list and range parsing, the cross product's order, one CSV whose bytes
// do not depend on the thread count, and --resume after a cut file.
#include <filesystem>
#include <fstream>
#include <sstream>

#include <unistd.h>

#include <map>
#include <set>

#include <catch2/catch.hpp>

#include "cli_driver.hpp"
#include "policies/registry.hpp"
#include "app/cli.hpp"
#include "studies/sweep_grid.hpp"
#include "studies/sweep_run.hpp"
#include "sim/error.hpp"
#include "sim/metrics.hpp"

namespace allocsim {
namespace {

namespace fs = std::filesystem;
using Ints = std::vector<std::int64_t>;
using test::cli;
using test::Outcome;
using test::read_file;
using test::TempDir;

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

TEST_CASE("sweep: ranges double or step, lists sort and merge", "[sweep]") {
  CHECK(parse_int_list("1:1024", "x") == Ints{1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024});
  CHECK(parse_int_list("1:1024,3:768", "x").size() == 20);  // powers of two and their midpoints
  CHECK(parse_int_list("3:12,1:4", "x") == Ints{1, 2, 3, 4, 6, 12});
  CHECK(parse_int_list("3:20", "x") == Ints{3, 6, 12});  // stops before passing b
  CHECK(parse_int_list("8:64:8", "x") == Ints{8, 16, 24, 32, 40, 48, 56, 64});
  CHECK(parse_int_list("3:10:4", "x") == Ints{3, 7});
  CHECK(parse_int_list("5", "x") == Ints{5});
  CHECK(parse_int_list(" 7 , 5,7", "x") == Ints{5, 7});
  CHECK(parse_int_list("0:6:3", "x") == Ints{0, 3, 6});
  for (const char* bad : {"", "10:1", "0:8", "1:2:0", "1:2:-1", "a", "1,,2", "1:2:3:4", "1.5", "1:100000000:1"}) {
    INFO(bad);
    CHECK_THROWS_AS(parse_int_list(bad, "--batch"), Error);
  }
  CHECK_THROWS_WITH(parse_int_list("10:1", "--batch"), Catch::Contains("--batch") && Catch::Contains("backwards"));
  CHECK(parse_size_list("16GiB,80GiB", "c") == std::vector<Bytes>{16_GiB, 80_GiB});
  CHECK(parse_size_list("1GiB:4GiB", "c") == std::vector<Bytes>{1_GiB, 2_GiB, 4_GiB});
  CHECK(parse_size_list("8GiB:10GiB:1GiB", "c") == std::vector<Bytes>{8_GiB, 9_GiB, 10_GiB});
  CHECK_THROWS_WITH(parse_size_list("16QiB", "--capacity"), Catch::Contains("--capacity"));
}

TEST_CASE("sweep: spec lists keep their own commas", "[sweep]") {
  using Items = std::vector<std::string>;
  CHECK(split_list("bfc,growth,caching", "p") == Items{"bfc", "growth", "caching"});
  CHECK(split_list("bfc:growth=true,limit=4GiB,caching", "p") == Items{"bfc:growth=true,limit=4GiB", "caching"});
  CHECK(split_list("random:n=10,seed=7", "w") == Items{"random:n=10,seed=7"});
  CHECK(split_list("caching:max_split_size=256MiB,bfc:gc=false", "p") == Items{"caching:max_split_size=256MiB", "bfc:gc=false"});
  CHECK_THROWS_AS(split_list("bfc,,caching", "p"), Error);
}

TEST_CASE("sweep: the model axes and their words come from the token table", "[sweep]") {
  std::map<std::string, std::string> words;
  for (const ModelAxis& axis : model_axes()) words[axis.name] = axis.value_name;
  CHECK(words == std::map<std::string, std::string>{{"batch", "NUMBERS"},
                                                    {"sequence", "NUMBERS"},
                                                    {"precision", "fp32,amp,bf16"},
                                                    {"optimizer", "sgd,momentum,adam,adamw"},
                                                    {"accumulation", "NUMBERS"},
                                                    {"steps", "NUMBERS"},
                                                    {"mode", "train,infer"}});
  SweepOptions options;
  options.workloads = {"bert_base"};
  options.policies = {"direct"};
  options.model_axes["mode"] = "train,infer";
  options.model_axes["sequence"] = "64";
  options.model_axes["optimizer"] = "adam";
  const std::vector<SweepPoint> points = expand_sweep(options);
  REQUIRE(points.size() == 2);
  CHECK(points[0].workload == "bert_base_adam_s64");
  CHECK(points[1].workload == "bert_base_adam_s64_infer");
  options.model_axes["nosuch"] = "1";
  CHECK_THROWS_WITH(expand_sweep(options), Catch::Contains("nosuch"));
}

TEST_CASE("sweep: the cross product, batch innermost, every spec checked first", "[sweep]") {
  SweepOptions options;
  options.workloads = {"seed_cnn"};
  options.policies = {"bfc,caching"};
  options.device.capacities = "1GiB,2GiB";
  options.model_axes["precision"] = "fp32,amp";
  options.model_axes["batch"] = "1:4";
  const std::vector<SweepPoint> points = expand_sweep(options);
  REQUIRE(points.size() == 2 * 2 * 2 * 3);
  for (std::size_t i = 0; i < points.size(); ++i) CHECK(points[i].index == i);
  CHECK(points[0].workload == "seed_cnn_fp32_b1");
  CHECK(points[1].workload == "seed_cnn_fp32_b2");
  CHECK(points[2].workload == "seed_cnn_fp32_b4");
  CHECK(points[3].policy == "caching");
  CHECK(points[3].workload == "seed_cnn_fp32_b1");
  CHECK(points[6].scenario.device.capacity == 2_GiB);
  CHECK(points[12].workload == "seed_cnn_amp_b1");
  CHECK(points[23].workload == "seed_cnn_amp_b4");
  CHECK(points[23].policy == "caching");
  REQUIRE(points[13].leading.size() == sweep_columns().size());
  CHECK(points[13].leading == std::vector<std::string>{"13", "seed_cnn", "2", "", "amp", "momentum", "1", "2", "train", "stop"});

  options.policies = {"all"};
  options.model_axes["batch"] = "8";
  options.model_axes.erase("precision");
  options.device.capacities.clear();
  CHECK(expand_sweep(options).size() == all_policies().size());

  SweepOptions generator;
  generator.workloads = {"random:n=100"};
  generator.policies = {"direct"};
  generator.params = {"seed=1:3:1", "live=1MiB:2MiB", "sizes=uniform"};
  const std::vector<SweepPoint> random_points = expand_sweep(generator);
  REQUIRE(random_points.size() == 6);
  CHECK(random_points[0].workload == "random:n=100,seed=1,live=1048576,sizes=uniform");
  CHECK(random_points[1].workload == "random:n=100,seed=1,live=2097152,sizes=uniform");
  CHECK(random_points[5].workload == "random:n=100,seed=3,live=2097152,sizes=uniform");
  generator.workloads = {"random"};
  generator.params = {"seed=4,5"};
  CHECK(expand_sweep(generator)[1].workload == "random:seed=5");

  SweepOptions bad = options;
  bad.params = {"seed=1,2"};
  CHECK_THROWS_WITH(expand_sweep(bad), Catch::Contains("is a model"));
  bad = generator;
  bad.params = {"nosuchkey=1"};
  CHECK_THROWS_WITH(expand_sweep(bad), Catch::Contains("nosuchkey"));
  bad = generator;
  bad.params = {"seed"};
  CHECK_THROWS_WITH(expand_sweep(bad), Catch::Contains("KEY=LIST"));
  bad = options;
  bad.workloads = {"random:n=100"};
  CHECK_THROWS_WITH(expand_sweep(bad), Catch::Contains("model workload"));
  bad = options;
  bad.model_axes["precision"] = "fp8";
  CHECK_THROWS_WITH(expand_sweep(bad), Catch::Contains("fp8"));
  bad = options;
  bad.policies = {"bfc,nosuch"};
  CHECK_THROWS_WITH(expand_sweep(bad), Catch::Contains("nosuch"));
  bad = options;
  bad.model_axes["batch"] = "0";
  CHECK_THROWS_WITH(expand_sweep(bad), Catch::Contains("b0"));
  bad = options;
  bad.device.presets = "v100-16gb,gtx480";
  CHECK_THROWS_WITH(expand_sweep(bad), Catch::Contains("gtx480"));
}

// Small enough for a test, large enough that some points run out of memory.
const std::vector<std::string> kSweep{"sweep",      "--workload",  "seed_cnn",  "--workload",
                                      "seed_cnn_dw", "--batch",     "1:64",      "--policy",
                                      "bfc,caching,direct,buddy", "--capacity", "64MiB,1GiB", "--precision",
                                      "fp32,amp",    "--quiet"};

std::vector<std::string> with(std::vector<std::string> args, std::initializer_list<std::string> more) {
  args.insert(args.end(), more);
  return args;
}

TEST_CASE("sweep: every column name is its own (a metric never repeats a point column)", "[sweep]") {
  for (const bool timing : {false, true}) {
    const std::vector<std::string> columns = sweep_base_columns(timing);
    const std::set<std::string> distinct(columns.begin(), columns.end());
    CHECK(distinct.size() == columns.size());
  }
}

TEST_CASE("sweep: one tidy CSV, the same bytes for 1 and 2 threads", "[sweep]") {
  const TempDir folder;
  const Outcome one = cli(with(kSweep, {"--threads", "1", "--csv", folder.file("one.csv")}));
  REQUIRE(one.status == 0);
  CHECK_THAT(one.out, Catch::Contains("sweep: 224 points (224 run, 0 kept"));
  const Outcome two = cli(with(kSweep, {"--threads", "2", "--csv", folder.file("two.csv")}));
  REQUIRE(two.status == 0);
  const std::string csv = read_file(folder.file("one.csv"));
  CHECK(csv == read_file(folder.file("two.csv")));
  CHECK(fs::directory_iterator(folder.path) != fs::directory_iterator());  // no temporary left
  for (const auto& entry : fs::directory_iterator(folder.path)) CHECK(entry.path().extension() == ".csv");

  const std::vector<std::string> rows = lines(csv);
  REQUIRE(rows.size() == 1 + 224);
  CHECK(rows[0].starts_with("point,model,batch,sequence,precision,optimizer,accumulation,steps,mode,on_oom,workload,policy,"));
  for (const Metric& metric : metrics()) {
    CHECK((rows[0].find(std::string(",").append(metric.name).append(",")) != std::string::npos) == !is_wall_clock(metric));
  }
  CHECK(rows[1].starts_with("0,seed_cnn,1,,fp32,momentum,1,2,train,stop,seed_cnn_fp32_b1,bfc,sim,67108864,"));
  CHECK(rows[224].starts_with("223,seed_cnn_dw,64,,amp,"));
  CHECK(csv.find(",capacity,") != std::string::npos);       // some point ran out of memory
  CHECK(csv.find("num_allocs") != std::string::npos);       // BFC's own statistics
  // To stdout without --csv, the same bytes.
  const Outcome stdout_run = cli(with(kSweep, {"--threads", "2"}));
  CHECK(stdout_run.out == csv);
  // A row is `allocsim run --csv`'s row for the same point, less the wall-clock cells.
  const std::string run_csv = folder.file("run.csv");
  REQUIRE(cli({"run", "--workload", "seed_cnn_dw_amp_b16", "--policy", "caching", "--capacity", "1GiB", "--csv", run_csv}).status == 0);
  const std::string run_row = lines(read_file(run_csv)).at(1);
  std::string sweep_row;
  for (const std::string& row : rows) {
    if (row.find(",seed_cnn_dw_amp_b16,caching,sim,1073741824,") != std::string::npos) sweep_row = row;
  }
  REQUIRE_FALSE(sweep_row.empty());
  // Drop the two wall-clock cells (they follow first_oom_kind's) and the sweep's ten leading ones.
  std::vector<std::string> cells;
  for (std::size_t at = 0;;) {
    const std::size_t comma = run_row.find(',', at);
    cells.push_back(run_row.substr(at, comma - at));
    if (comma == std::string::npos) break;
    at = comma + 1;
  }
  cells.resize(metrics().size());  // the policy's statistics sit in other columns here
  std::size_t wall = 0;
  for (const Metric& metric : metrics()) {
    if (is_wall_clock(metric)) break;
    ++wall;
  }
  cells.erase(cells.begin() + static_cast<std::ptrdiff_t>(wall), cells.begin() + static_cast<std::ptrdiff_t>(wall) + 2);
  std::string expected_row;
  for (const std::string& cell : cells) expected_row += (expected_row.empty() ? "" : ",") + cell;
  std::size_t leading = 0;
  for (int i = 0; i < 10; ++i) leading = sweep_row.find(',', leading) + 1;
  CHECK(sweep_row.substr(leading).starts_with(expected_row));
  // --timing adds the wall-clock columns.
  const Outcome timed = cli({"sweep", "--workload", "seed_cnn", "--policy", "direct", "--timing", "--quiet"});
  CHECK_THAT(lines(timed.out)[0], Catch::Contains(",replay_seconds,events_per_second,"));
}

TEST_CASE("sweep: --resume after a cut CSV runs only what is missing", "[sweep]") {
  const TempDir folder;
  const std::string full = folder.file("full.csv");
  REQUIRE(cli(with(kSweep, {"--csv", full})).status == 0);
  const std::string expected = read_file(full);
  const std::string cut = folder.file("cut.csv");
  const auto keep = [&](std::size_t rows, std::size_t extra_chars) {
    std::size_t at = 0;
    for (std::size_t i = 0; i <= rows; ++i) at = expected.find('\n', at) + 1;
    std::ofstream(cut, std::ios::binary) << expected.substr(0, at + extra_chars);
  };
  keep(100, 17);  // 100 whole rows and the start of the next
  const Outcome resumed = cli(with(kSweep, {"--csv", cut, "--resume", "--threads", "2"}));
  REQUIRE(resumed.status == 0);
  CHECK_THAT(resumed.out, Catch::Contains("224 points (124 run, 100 kept from the CSV)"));
  CHECK(read_file(cut) == expected);
  // Resuming a finished sweep runs nothing; a missing file runs everything.
  CHECK_THAT(cli(with(kSweep, {"--csv", cut, "--resume"})).out, Catch::Contains("(0 run, 224 kept"));
  CHECK_THAT(cli(with(kSweep, {"--csv", folder.file("new.csv"), "--resume"})).out, Catch::Contains("(224 run, 0 kept"));
  // Only the header: nothing kept.
  keep(0, 0);
  CHECK_THAT(cli(with(kSweep, {"--csv", cut, "--resume"})).out, Catch::Contains("(224 run, 0 kept"));
  CHECK(read_file(cut) == expected);
  // Another sweep's file is refused, and left as it was.
  keep(10, 0);
  const std::string before = read_file(cut);
  const Outcome other = cli({"sweep", "--workload", "seed_cnn", "--batch", "1:64", "--policy", "direct", "--csv", cut,
                             "--resume", "--quiet"});
  CHECK(other.status == 2);
  CHECK_THAT(other.err, Catch::Contains("not the same point"));
  CHECK(read_file(cut) == before);
  CHECK(cli({"sweep", "--workload", "seed_cnn", "--policy", "direct", "--resume"}).status == 2);  // no --csv
}

TEST_CASE("sweep: co-tenants give a row each per point; bad input exits 2 without a file", "[sweep]") {
  const TempDir folder;
  const Outcome shared = cli({"sweep", "--workload", "random:n=2000,live=4GiB", "--policy", "bfc,growth", "--tenant",
                              "random:n=2,min=2560MiB,max=2560MiB@growth", "--capacity", "16GiB", "--quiet"});
  REQUIRE(shared.status == 0);
  const std::vector<std::string> rows = lines(shared.out);
  REQUIRE(rows.size() == 1 + 2 * 2);
  CHECK(rows[2].starts_with("0,,,,,,,,,stop,\"random:n=2,min=2560MiB,max=2560MiB\",growth,"));
  CHECK_THAT(rows[2], Catch::Contains(",reservation,"));  // the first tenant's preallocation starves it
  CHECK_THAT(rows[4], Catch::Contains("random:n=2,min=2560MiB,max=2560MiB\",growth,") && !Catch::Contains("reservation"));

  const std::string csv = folder.file("bad.csv");
  for (const std::vector<std::string>& bad : std::vector<std::vector<std::string>>{
           {"sweep", "--workload", "seed_cnn", "--policy", "direct", "--batch", "64:1", "--csv", csv},
           {"sweep", "--workload", "seed_cnn", "--policy", "direct", "--on-oom", "retry", "--csv", csv},
           {"sweep", "--workload", "nosuch_model", "--policy", "direct", "--csv", csv},
           {"sweep", "--workload", "seed_cnn", "--csv", csv},
           {"sweep", "--workload", "seed_cnn", "--policy", "direct", "--csv", folder.file("no/such/folder.csv")},
       }) {
    const Outcome outcome = cli(bad);
    INFO(outcome.err);
    CHECK(outcome.status == 2);
    CHECK(outcome.err.find('\n') == outcome.err.size() - 1);
  }
  CHECK_FALSE(fs::exists(csv));
  CHECK_THAT(cli({"sweep", "--help"}).out, Catch::Contains("1:1024,3:768"));
  // docs/sweeps.md documents the parameter columns, in their order.
  std::string documented;
  for (const std::string& column : sweep_columns()) documented += (documented.empty() ? "" : ", ") + column;
  CHECK_THAT(read_file(ALLOCSIM_DOCS "/sweeps.md"), Catch::Contains("`" + documented + "`"));
}

}  // namespace
}  // namespace allocsim
