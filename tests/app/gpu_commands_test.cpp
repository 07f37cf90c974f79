// `allocsim validate` and `allocsim calibrate` as a user meets them, on the host stand-in;
// and the one line and exit status 2 where no GPU can be opened. No test calls CUDA.
#include <filesystem>
#include <fstream>
#include <sstream>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include "cli_driver.hpp"
#include "real_gpu/cuda_api.hpp"
#include "real_gpu/host_api.hpp"
#include "app/cli.hpp"
#include "app/commands.hpp"
#include "sim/cost_profile.hpp"
#include "sim/error.hpp"

namespace allocsim {
namespace {

namespace fs = std::filesystem;
using namespace test;  // the CLI driver: cli, Outcome, one_line, TempDir, ...

constexpr const char* kSmall = "random:n=400,max=3MiB,live=32MiB,seed=5";

TEST_CASE("cli validate --backend host: the table on stdout, the comparison and the calls as CSV", "[cli][real_gpu]") {
  TempDir folder;
  const Outcome run = cli({"validate", "--workload", kSmall, "--policy", "caching", "--backend", "host", "--cap",
                           "4GiB", "--out", folder.path.string()});
  INFO(run.err);
  REQUIRE(run.status == 0);
  CHECK_THAT(run.out, Catch::Contains("peak_reserved_bytes") && Catch::Contains("device_used_peak_bytes") &&
                          Catch::Contains("ballast") && Catch::Contains("exact metrics agree"));
  const std::string stem = "random_n_400_max_3MiB_live_32MiB_seed_5__caching__cap4GiB__host";
  const std::string table = read_file(folder.path / (stem + ".csv"));
  const std::string calls = read_file(folder.path / (stem + ".calls.csv"));
  CHECK_THAT(table, Catch::StartsWith("workload,policy,backend,"));
  CHECK_THAT(table, Catch::Contains(",peak_reserved_bytes,exact,"));
  CHECK_THAT(table, Catch::Contains(",4294967296,"));  // the capped capacity
  CHECK_THAT(calls, Catch::StartsWith("index,op,bytes,measured_ns,simulated_ns\n"));
  CHECK(fs::exists(folder.path / (stem + ".calls.csv")));
}

TEST_CASE("cli validate --backend host without --out writes to a new temporary folder, never results/", "[cli][real_gpu]") {
  TempDir cwd;
  const fs::path before = fs::current_path();
  fs::current_path(cwd.path);  // where a relative results/validation would land
  const Outcome run = cli({"validate", "--workload", kSmall, "--policy", "bfc", "--backend", "host"});
  fs::current_path(before);
  INFO(run.err);
  REQUIRE(run.status == 0);
  CHECK(!fs::exists(cwd.path / "results"));
  const std::string wrote = run.out.substr(run.out.rfind("wrote ") + 6);
  const fs::path table = wrote.substr(0, wrote.find(" and "));
  CHECK(table.parent_path().filename().string().starts_with("allocsim-validate-"));
  CHECK(fs::equivalent(table.parent_path().parent_path(), fs::temp_directory_path()));
  CHECK(fs::exists(table));
  fs::remove_all(table.parent_path());
}

TEST_CASE("cli validate --backend host runs the page-mapping policies and agrees with the simulation",
          "[cli][real_gpu][vmm]") {
  const std::string policy = GENERATE(as<std::string>{}, "vmm", "expandable");
  INFO(policy);
  TempDir folder;
  const Outcome run =
      cli({"validate", "--workload", "resnet50_b8", "--policy", policy, "--backend", "host", "--out", folder.path.string()});
  INFO(run.err);
  REQUIRE(run.status == 0);
  // Uncapped, nothing can OOM and the same trace is replayed, so events, allocated bytes and
  // the OOM rows agree by construction; reserved bytes, device calls and bytes used count.
  CHECK_THAT(run.out, Catch::Contains("4 of 4 informative exact metrics agree; 7 more are equal by construction"));
  CHECK_THAT(run.out, Catch::Contains("map_ns_mean"));  // the VMM calls went to the device
  const std::string table = read_file(folder.path / ("resnet50_b8__" + policy + "__host.csv"));
  CHECK_THAT(table, !Catch::Contains(",NO,"));
}

TEST_CASE("cli validate: bad input is one line and exit status 2", "[cli][real_gpu]") {
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"validate", "--workload", kSmall},
           {"validate", "--workload", kSmall, "--policy", "nosuch", "--backend", "host"},
           {"validate", "--workload", kSmall, "--policy", "bfc", "--backend", "tpu"},
           {"validate", "--workload", kSmall, "--policy", "bfc", "--backend", "host", "--segments", "huge"},
           {"validate", "--workload", kSmall, "--policy", "bfc", "--backend", "host", "--cap", "1TiB"},
           {"validate", "--workload", kSmall, "--policy", "bfc", "--backend", "host", "--device-profile", "/no/p.json"},
           {"calibrate", "--backend", "host", "--repeat", "0"},
       }) {
    const Outcome run = cli(args);
    INFO(args[args.size() - 1] << ": " << run.err);
    CHECK(run.status == 2);
    CHECK(one_line(run.err));
  }
}

TEST_CASE("cli validate without a GPU: one line that says what is missing, exit status 2", "[cli][real_gpu]") {
  // Whatever this build has, an opener that fails as open_cuda_device does on a machine
  // without a driver; the CLI's own catch turns the Error into the line and status 2.
  const DeviceOpener no_driver = [](const BackendChoice&) -> std::unique_ptr<DeviceApi> {
    throw Error(describe_cuda_unavailable(35, "cudaErrorInsufficientDriver", "CUDA driver version is insufficient"));
  };
  std::ostringstream out;
  const std::vector<std::string> args{"--workload", kSmall, "--policy", "bfc"};
  CHECK_THROWS_WITH(validate_command(args, out, no_driver),
                    Catch::StartsWith("no usable NVIDIA driver") && Catch::Contains("cudaErrorInsufficientDriver"));
  CHECK_THAT(describe_cuda_unavailable(100, "cudaErrorNoDevice", "no CUDA-capable device is detected"),
             Catch::StartsWith("no CUDA GPU on this machine"));
  CHECK_THAT(describe_cuda_unavailable(999, "cudaErrorUnknown", "unknown error"),
             Catch::Contains("cannot open a GPU") && Catch::Contains("cudaErrorUnknown"));
  if (!built_with_cuda()) {
    // The real path of a build without the toolkit: nothing of CUDA is linked to call.
    const Outcome run = cli({"validate", "--workload", kSmall, "--policy", "bfc"});
    CHECK(run.status == 2);
    CHECK(one_line(run.err));
    CHECK_THAT(run.err, Catch::Contains("built without CUDA support"));
    const Outcome calibrate = cli({"calibrate", "--out", "/tmp/never-written.json"});
    CHECK(calibrate.status == 2);
    CHECK_FALSE(fs::exists("/tmp/never-written.json"));
  }
}

TEST_CASE("cli calibrate --backend host writes a profile that run --device-profile prices calls with",
          "[cli][real_gpu]") {
  TempDir folder;
  const std::string profile = (folder.path / "host.json").string();
  const Outcome calibrate = cli({"calibrate", "--backend", "host", "--host-memory", "1GiB", "--max-size", "8MiB",
                                 "--copy-size", "4MiB", "--repeat", "2", "--out", profile});
  INFO(calibrate.err);
  REQUIRE(calibrate.status == 0);
  CHECK_THAT(calibrate.out, Catch::Contains("malloc:") && Catch::Contains("wrote " + profile));
  CHECK(load_cost_profile(profile).backend == "host");

  // A profile of known costs: every cudaMalloc 1 ms, every cudaFree 0.5 ms, nothing per byte.
  CostProfile fixed;
  fixed.device = "made up";
  fixed.backend = "cuda";
  fixed.cost = {1'000'000, 0, 500'000, 0, 1000};
  const std::string fixed_path = (folder.path / "fixed.json").string();
  {
    std::ofstream file(fixed_path);
    write_cost_profile(file, fixed);
  }
  const std::string json_path = (folder.path / "run.json").string();
  const Outcome run = cli({"run", "--workload", kSmall, "--policy", "direct", "--device-profile", fixed_path,
                           "--json", json_path});
  INFO(run.err);
  REQUIRE(run.status == 0);
  const auto result = nlohmann::json::parse(read_file(json_path));
  const auto& tenant = result.at("tenants").at(0);
  const std::uint64_t mallocs = tenant.at("device_mallocs").get<std::uint64_t>();
  const std::uint64_t frees = tenant.at("device_frees").get<std::uint64_t>();
  CHECK(mallocs > 0);
  CHECK(tenant.at("allocator_time_ns").get<std::uint64_t>() == mallocs * 1'000'000 + frees * 500'000);
}

}  // namespace
}  // namespace allocsim
