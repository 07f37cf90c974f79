// The command line as a user meets it: help, listings, runs, and every kind of bad input
// answered with one line, exit status 2 and no output file.
#include <filesystem>
#include <fstream>
#include <sstream>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "cli_driver.hpp"
#include "shared_traces.hpp"
#include "policies/registry.hpp"
#include "app/cli.hpp"
#include "sim/metrics.hpp"
#include "workloads/catalogue.hpp"

namespace allocsim {
namespace {

namespace fs = std::filesystem;
using namespace test;  // the CLI driver: cli, Outcome, one_line, TempDir, ...

TEST_CASE("cli: help teaches, listings name everything in the registries", "[cli]") {
  const Outcome help = cli({"--help"});
  CHECK(help.status == 0);
  CHECK_THAT(help.out, Catch::Contains("Examples:") && Catch::Contains("--on-oom"));
  const Outcome policies = cli({"policies"});
  CHECK(policies.status == 0);
  for (const PolicyInfo& info : all_policies()) CHECK_THAT(policies.out, Catch::Contains(std::string(info.name)));
  CHECK_THAT(policies.out, Catch::Contains("region=0"));
  const Outcome workloads = cli({"workloads"});
  for (const WorkloadInfo& info : all_workloads()) CHECK_THAT(workloads.out, Catch::Contains(std::string(info.name)));
  CHECK_THAT(cli({"devices"}).out, Catch::Contains("v100-16gb"));
}

TEST_CASE("cli: a run prints the table and writes CSV, JSON and a timeline", "[cli]") {
  TempDir dir;
  const std::string csv = dir.file("out.csv");
  const std::string json = dir.file("out.json");
  const std::string timeline = dir.file("timeline.csv");
  const Outcome run = cli({"run", "--workload", "random:n=2000,live=4MiB,max=1MiB", "--policy", "bestfit", "--capacity",
                           "64MiB", "--csv", csv, "--json", json, "--timeline", timeline, "--check"});
  INFO(run.err);
  REQUIRE(run.status == 0);
  CHECK_THAT(run.out, Catch::Contains("peak_reserved_bytes") && Catch::Contains("64 MiB"));
  std::ifstream csv_in(csv);
  std::string header;
  std::getline(csv_in, header);
  CHECK_THAT(header, Catch::StartsWith(
                         "workload,policy,device,capacity_bytes,events,peak_requested_bytes,peak_allocated_bytes,"
                         "peak_reserved_bytes,live_lower_bound_bytes,overhead_vs_lower_bound,fragmentation_at_peak,"
                         "external_fragmentation_at_peak,device_mallocs,device_frees,allocator_time_ns,bytes_moved,"
                         "oom_count,first_oom_event,first_oom_bytes,first_oom_kind,replay_seconds,events_per_second"));
  std::string row;
  std::getline(csv_in, row);
  CHECK_THAT(row, Catch::StartsWith("\"random:n=2000,live=4MiB,max=1MiB\",bestfit,sim,67108864,2000,"));
  const auto document = nlohmann::json::parse(std::ifstream(json));
  CHECK(document["tenants"][0]["peak_reserved_bytes"] == 64_MiB);
  CHECK(document["tenants"][0]["first_oom_kind"].is_null());
  std::ifstream timeline_in(timeline);
  std::getline(timeline_in, header);
  CHECK(header == "time_ns,tenant,event,allocated_bytes,reserved_bytes,device_used_bytes");
}

TEST_CASE("cli: a model run says which step its peak is in, in the table, CSV and JSON", "[cli][steady]") {
  TempDir dir;
  const std::string csv = dir.file("out.csv");
  const std::string json = dir.file("out.json");
  // seed_cnn with momentum: the buffers made at step 1's end are live all through step 2.
  const Outcome run = cli({"run", "--workload", "seed_cnn_b2", "--policy", "caching", "--csv", csv, "--json", json});
  INFO(run.err);
  REQUIRE(run.status == 0);
  CHECK_THAT(run.out, Catch::Contains("peak_step ") && Catch::Contains(", step 2 of 2 (steady state)): "));
  std::ifstream csv_in(csv);
  std::string header, row;
  std::getline(csv_in, header);
  std::getline(csv_in, row);
  CHECK_THAT(header, Catch::EndsWith(",peak_runtime_bytes,peak_step,trace_steps,first_oom_step") ||
                         Catch::Contains(",peak_runtime_bytes,peak_step,trace_steps,first_oom_step,"));
  const auto document = nlohmann::json::parse(std::ifstream(json));
  CHECK(document["tenants"][0]["peak_step"] == 2);
  CHECK(document["tenants"][0]["trace_steps"] == 2);
  // Two cuBLAS workspaces of 32 MiB (a plain device counts as sm_90) are alive at the peak.
  CHECK(document["tenants"][0]["peak_runtime_bytes"] == 64_MiB);
  const Outcome first = cli({"run", "--workload", "seed_cnn_b2_steps1", "--policy", "caching"});
  CHECK_THAT(first.out, Catch::Contains(", step 1 of 1): "));
}

TEST_CASE("cli: tenants share a device", "[cli]") {
  const Outcome run = cli({"--capacity", "16KiB", "--tenant", "random:n=10,min=1KiB,max=1KiB,live=1KiB@bestfit",
                           "--tenant", "random:n=10,seed=2,min=4KiB,max=4KiB,live=1KiB@direct"});
  INFO(run.err);
  REQUIRE(run.status == 0);
  CHECK_THAT(run.out, Catch::Contains("tenant 1") && Catch::Contains("reservation"));
}

TEST_CASE("cli: bad input is one line, exit status 2, and no output file", "[cli]") {
  TempDir dir;
  const std::string header = "time_ns,op,id,bytes,stream,tag\n";
  const std::string csv_out = dir.file("never.csv");
  const auto expect_error = [&](std::vector<std::string> args, const std::string& message) {
    args.insert(args.end(), {"--csv", csv_out});
    const Outcome outcome = cli(args);
    INFO(outcome.err);
    CHECK(outcome.status == 2);
    CHECK(one_line(outcome.err));
    CHECK_THAT(outcome.err, Catch::StartsWith("allocsim: ") && Catch::Contains(message));
    CHECK_FALSE(fs::exists(csv_out));
  };
  expect_error({"--workload", "random:n=10", "--policy", "nosuch"}, "unknown policy 'nosuch'; valid policies: bfc");
  expect_error({"--workload", "random:n=10", "--policy", "bestfit:nokey=1"}, "valid keys: region=0, alignment=256");
  // The whole policy spec is checked before any trace loads: the policy is named, not the file.
  expect_error({"--workload", "/nonexistent.csv", "--policy", "bfc:bogus=1"}, "unknown key 'bogus'");
  expect_error({"--workload", "/nonexistent.csv", "--policy", "bfc:frag_fraction=2"}, "frag_fraction");
  // A later tenant's spec too, though the engine builds its policy only when it starts.
  expect_error({"--workload", "random:n=10", "--policy", "bfc", "--tenant", "random:n=10@buddy:min_block=3"},
               "policy buddy: min_block=3 B is not a power of two");
  expect_error({"--workload", "random:n=10", "--policy", "direct", "--capacity", "16GB!"}, "unknown unit");
  expect_error({"--workload", "nosuch", "--policy", "direct"}, "unknown workload 'nosuch'");
  expect_error({"--workload", "random:n=10", "--policy", "direct", "--on-oom", "retry"}, "is not stop or continue");
  expect_error({"--workload", "random:n=10", "--policy", "direct", "--bogus"}, "unrecognised option '--bogus'");
  expect_error({"--policy", "direct"}, "--policy needs a --workload");
  expect_error({"--tenant", "random"}, "is not WORKLOAD@POLICY");
  expect_error({"--device", "v99", "--workload", "random:n=10", "--policy", "direct"}, "unknown device 'v99'");
  expect_error({"frobnicate"}, "unknown command 'frobnicate'");
  expect_error({"--workload", "resnet50", "--policy", "direct", "--batch", "0"}, "--batch needs a batch of 1 or more");
  expect_error({"--workload", "random:n=10", "--policy", "direct", "--batch", "8"}, "and a model workload");
  expect_error({"--workload", "random:n=10", "--policy", "direct", "--timeline", "/nonexistent/t.csv"},
               "no folder /nonexistent");
  const std::string missing = dir.file("missing_column.csv", "time_ns,op,id\n0,alloc,a\n");
  expect_error({"--workload", missing, "--policy", "direct"}, missing + ":1: header lacks column 'bytes'");
  const std::string negative = dir.file("negative.csv", header + "0,alloc,a,-1,0,other\n");
  expect_error({"--workload", negative, "--policy", "direct"}, negative + ":2: bytes '-1'");
  const std::string unknown_op = dir.file("op.csv", header + "0,grab,a,1,0,other\n");
  expect_error({"--workload", unknown_op, "--policy", "direct"}, unknown_op + ":2: unknown op 'grab'");
  const std::string unknown_id = dir.file("id.csv", header + "0,free,q,,,\n");
  expect_error({"--workload", unknown_id, "--policy", "direct"}, unknown_id + ":2: free of id q, which is not live");
  const std::string twice = dir.file("twice.csv", header + "0,alloc,a,1,,\n1,free,a,,,\n2,free,a,,,\n");
  expect_error({"--workload", twice, "--policy", "direct"}, twice + ":4: free of id a, which is not live");
  const std::string huge = dir.file("huge.csv", header + "0,alloc,a,281474976710657,,\n");
  expect_error({"--workload", huge, "--policy", "direct"}, "over the 2^48-byte limit");
  const std::string empty = dir.file("empty.csv", header);
  expect_error({"--workload", empty, "--policy", "direct"}, empty + ": empty trace");
  CHECK(dir.entries() == 7);  // the traces above, and no temporary left behind
}

}  // namespace
}  // namespace allocsim

namespace allocsim {
namespace {

// The value in the table row `name`, or "" when there is no such row.
std::string table_value(const std::string& table, const std::string& name) {
  std::istringstream lines(table);
  for (std::string line; std::getline(lines, line);) {
    if (!line.starts_with(name + " ")) continue;
    return line.substr(line.find_first_not_of(' ', name.size()));
  }
  return {};
}

TEST_CASE("cli: a PyTorch snapshot is a workload; a bad pickle is one line and exit 2", "[cli]") {
  TempDir dir;
  const Outcome bad = cli({"--workload", dir.file("bad.pickle", "not a pickle at all\n"), "--policy", "caching"});
  CHECK(bad.status == 2);
  CHECK(one_line(bad.err));
  CHECK_THAT(bad.err, Catch::Contains("bad.pickle"));
  // tests/data/tiny.snapshot.pickle: 3 allocs and 4 frees recorded, one of them of a
  // 4096-byte block allocated before the recording began: 8 events, 2 MiB + 1000 + 4096 live at most.
  const Outcome tiny = cli({"--workload", std::string(ALLOCSIM_TEST_DATA) + "/tiny.snapshot.pickle", "--policy", "caching"});
  INFO(tiny.err);
  REQUIRE(tiny.status == 0);
  CHECK(table_value(tiny.out, "events") == "8");
  CHECK(table_value(tiny.out, "live_lower_bound_bytes") == "2.00 MiB");  // 2,102,248 B
  const auto recorded = test::shared_trace("vae_decode_loop.snapshot.pickle");
  if (!recorded) return;
  const Outcome run = cli({"--workload", recorded->string(), "--policy", "caching", "--capacity", "16GiB"});
  INFO(run.err);
  CHECK(run.status == 0);
  // 1935 allocs and 1926 frees recorded, plus 31 blocks that predate the recording.
  CHECK(table_value(run.out, "events") == "3892");
}

}  // namespace
}  // namespace allocsim

namespace allocsim {
namespace {

TEST_CASE("cli: replay-check prints exact or the first divergence; bad input is exit 2", "[cli][replay-check]") {
  const Outcome help = cli({"replay-check", "--help"});
  CHECK(help.status == 0);
  CHECK_THAT(help.out, Catch::Contains("Exit status: 0 exact, 1 diverged, 2 bad input"));
  const Outcome none = cli({"replay-check"});
  CHECK(none.status == 2);
  CHECK(one_line(none.err));
  // The tiny fixture records a block freed in the trace but no segment to hold it.
  const Outcome tiny = cli({"replay-check", std::string(ALLOCSIM_TEST_DATA) + "/tiny.snapshot.pickle"});
  CHECK(tiny.status == 2);
  CHECK(one_line(tiny.err));
  CHECK_THAT(tiny.err, Catch::Contains("lies in no recorded segment"));
  const auto recorded = test::shared_trace("vae_decode_loop.snapshot.pickle");
  if (!recorded) return;
  const Outcome run = cli({"replay-check", recorded->string()});
  INFO(run.out << run.err);
  CHECK(run.status == 0);
  CHECK_THAT(run.out, Catch::Contains("segment events: 7 recorded, 7 simulated"));
  CHECK_THAT(run.out, Catch::Contains("reserved peak: recorded 128 MiB (134217728 B), simulated 128 MiB (134217728 B)"));
  CHECK_THAT(run.out, Catch::EndsWith("\nexact\n"));
}

TEST_CASE("docs/outputs.md documents every output column", "[cli]") {
  std::ifstream in(ALLOCSIM_DOCS "/outputs.md");
  REQUIRE(in);
  const std::string outputs((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  for (const Metric& metric : metrics()) {
    CAPTURE(metric.name);
    std::string quoted(1, '`');  // built step by step: GCC 12 warns falsely on "`" + string
    quoted.append(metric.name).push_back('`');
    CHECK_THAT(outputs, Catch::Contains(quoted));
  }
}

}  // namespace
}  // namespace allocsim
