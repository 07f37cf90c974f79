// A PyTorch recording as the commands take it, driven as a user would: the same layer
// names in every output, the device a replay or a run picks, a pipe refused by name.
#include <sys/stat.h>

#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "cli_driver.hpp"
#include "studies/synthetic_snapshot.hpp"
#include "workloads/catalogue.hpp"
#include "workloads/torch_recording.hpp"

namespace allocsim {
namespace {

using Catch::Contains;

// 30 MiB from model.py's forward, then 20 MiB on autograd's engine thread (its stack all
// C++, libstdc++'s thread start among it), both live at the peak, then freed.
constexpr const char* kLayered = R"py(
M = 1 << 20
alloc = dict(filename="CUDACachingAllocator.cpp", line=0, name="malloc")
engine = dict(filename="??", line=0, name="torch::autograd::Engine::thread_main(std::shared_ptr<torch::autograd::GraphTask> const&)")
thread = dict(filename="thread48.o", line=0, name="execute_native_thread_routine")
model = dict(filename="/home/me/model.py", line=42, name="forward")
X = 0x7f0000000000
Y = X + 30 * M
trace = [e("segment_alloc", X, 50 * M), e("alloc", X, 30 * M, frames=[alloc, model]),
         e("alloc", Y, 20 * M, frames=[alloc, engine, thread]),
         e("free_requested", X, 30 * M), e("free_completed", X, 30 * M),
         e("free_requested", Y, 20 * M), e("free_completed", Y, 20 * M)]
snapshot = {"segments": [seg(X, 50 * M, [b(50 * M, "inactive", address=X)])], "device_traces": [trace]}
)py";

TEST_CASE("a recording's layers: one name per block in trace info, run's breakdown and the replay", "[cli][recordings]") {
  const test::TempDir dir;
  const std::string path = test::write_snapshot(dir, "layered.pickle", kLayered);
  const std::vector<std::string> names{"model.py:42 forward", "autograd backward"};
  // The workload every command loads and the recording the replay reads name them alike.
  CHECK(load_workload(parse_workload_spec(path)).layer_names == names);
  CHECK(read_torch_recording(path).trace.layer_names == names);

  const test::Outcome info = test::cli({"trace", "info", path});
  INFO(info.err);
  REQUIRE(info.status == 0);
  CHECK_THAT(info.out, Contains("layers: 2"));
  const test::Outcome run = test::cli({"run", "--workload", path, "--policy", "caching"});
  INFO(run.err);
  REQUIRE(run.status == 0);
  CHECK_THAT(run.out, Contains("top layers: model.py:42 forward 30 MiB, autograd backward 20 MiB"));
  CHECK_THAT(run.out, !Contains("thread48.o"));
}

TEST_CASE("replay takes --device: the preset's capacity and context, --capacity over it", "[cli][recordings]") {
  const test::TempDir dir;
  const std::string path = test::write_snapshot(dir, "oom.pickle", test::kFragmentationOom);
  // rtx-a6000: 47.54 GiB as PyTorch prints it, 48680 MiB; the 500 MiB context estimate.
  const test::Outcome a6000 = test::cli({"replay", path, "--policy", "caching", "--device", "rtx-a6000"});
  INFO(a6000.err);
  REQUIRE(a6000.status == 0);
  CHECK_THAT(a6000.out, Contains("device: 47.5 GiB (51044679680 B), context 500 MiB, --device rtx-a6000"));
  CHECK_THAT(a6000.out, Contains("avoided the recorded OOM") && Contains("yes"));
  const test::Outcome capped = test::cli({"replay", path, "--policy", "caching", "--device", "t4", "--capacity", "520MiB"});
  INFO(capped.err);
  REQUIRE(capped.status == 0);
  CHECK_THAT(capped.out, Contains("device: 520 MiB (545259520 B), context 500 MiB, --device t4 with --capacity"));
  // 520 MiB less the 500 MiB context leaves 20 MiB: the first 40 MiB request finds no room.
  CHECK_THAT(capped.out, Contains("first OOM, caching: trace event 0: 40 MiB"));
  // 2^64 bytes is past what a size holds: refused by name, on replay as on run.
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"replay", path, "--capacity", "18446744073709551616"},
           {"run", "--workload", path, "--policy", "caching", "--capacity", "17179869184GiB"}}) {
    const test::Outcome huge = test::cli(args);
    CHECK(huge.status == 2);
    CHECK_THAT(huge.err, Contains("--capacity: bad size") && Contains("too large"));
  }
  const test::Outcome unknown = test::cli({"replay", path, "--device", "nope"});
  CHECK(unknown.status == 2);
  CHECK_THAT(unknown.err, Contains("unknown device 'nope'"));
  // A log replays on the preset too.
  const test::Outcome log = test::cli({"replay", std::string(ALLOCSIM_TEST_DATA) + "/rmm_pool_oom.dev0.csv", "--policy",
                                       "rmm-pool", "--device", "t4"});
  INFO(log.err);
  REQUIRE(log.status == 0);
  CHECK_THAT(log.out, Contains("--device t4"));
}

TEST_CASE("run on a recording: the card it ran on where it says, else which device it used", "[cli][recordings]") {
  const test::TempDir dir;
  const std::string oom = test::write_snapshot(dir, "oom.pickle", test::kFragmentationOom);
  const test::Outcome recorded = test::cli({"run", "--workload", oom, "--policy", "caching"});
  INFO(recorded.err);
  REQUIRE(recorded.status == 0);
  CHECK_THAT(recorded.out, Contains("device recorded: 70 MiB") &&
                               Contains("the recorded card, as far as the recording says"));
  const std::string quiet = test::write_snapshot(dir, "quiet.pickle", kLayered);
  const test::Outcome plain = test::cli({"run", "--workload", quiet, "--policy", "caching"});
  INFO(plain.err);
  REQUIRE(plain.status == 0);
  CHECK_THAT(plain.out, Contains("device sim: 16 GiB") &&
                            Contains("does not say which card it ran on: the default device (16 GiB); --device or "
                                     "--capacity sets it"));
  const test::Outcome chosen = test::cli({"run", "--workload", oom, "--policy", "caching", "--device", "t4"});
  REQUIRE(chosen.status == 0);
  CHECK_THAT(chosen.out, Contains("device t4:") && !Contains("recorded card") && !Contains("does not say"));
}

TEST_CASE("a trace given through a pipe is refused by name: its head would be gone", "[cli][recordings]") {
  const test::TempDir dir;
  const std::string fifo = dir.file("trace.json");
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"trace", "info", fifo}, {"run", "--workload", fifo, "--policy", "caching"}, {"replay", fifo}}) {
    const test::Outcome piped = test::cli(args);
    CHECK(piped.status == 2);
    CHECK(test::one_line(piped.err));
    CHECK_THAT(piped.err, Contains(fifo + ": give a file: a pipe can be read once"));
  }
}

}  // namespace
}  // namespace allocsim
