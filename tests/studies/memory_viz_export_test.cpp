#include "studies/memory_viz_export.hpp"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <memory>

#include <catch2/catch.hpp>

#include "cli_driver.hpp"
#include "policies/registry.hpp"
#include "sim/error.hpp"
#include "sim/forwarding_device.hpp"
#include "sim/sim_device.hpp"
#include "studies/replay_check.hpp"
#include "workloads/catalogue.hpp"
#include "workloads/random_trace.hpp"
#include "workloads/torch_recording.hpp"

namespace allocsim {
namespace {

// A small training step of a real model: weights, activations, gradients, workspace.
constexpr const char* kModel = "resnet50_b2_nows_steps1";

Scenario scenario_of(std::vector<std::pair<std::shared_ptr<const Trace>, std::string>> tenants, Bytes capacity) {
  Scenario scenario;
  scenario.device.capacity = capacity;
  for (auto& [trace, policy] : tenants) scenario.tenants.push_back(TenantSpec{trace, policy_maker(policy), 0});
  return scenario;
}

// Runs `scenario` on `device` with the exporter and writes the snapshot into `dir`.
std::string export_run(const test::TempDir& dir, const Scenario& scenario, Device* device = nullptr,
                       RunResult* result = nullptr) {
  MemoryVizExport exporter(scenario);
  Observer* observers[] = {&exporter};
  RunResult run_result = device ? run_on(*device, scenario, observers) : run(scenario, observers);
  if (result) *result = run_result;
  const std::string path = dir.file("snapshot.pickle");
  std::ofstream out(path, std::ios::binary);
  exporter.write(out);
  return path;
}

// tools/check_memory_viz.py: the viewer's view, through Python's standard unpickler.
bool viewer_check(const std::string& path) {
  const std::filesystem::path tool =
      std::filesystem::path(ALLOCSIM_README).parent_path() / "tools" / "check_memory_viz.py";
  return std::system(("python3 '" + tool.string() + "' '" + path + "' > /dev/null").c_str()) == 0;
}

TEST_CASE("memory-viz: caching on a model step exports a snapshot that replay-check replays exact", "[memory-viz]") {
  test::TempDir dir;
  const auto trace = std::make_shared<const Trace>(load_workload(kModel));
  const std::string path = export_run(dir, scenario_of({{trace, "caching"}}, 16_GiB));
  CHECK(viewer_check(path));
  const TorchRecording recording = read_torch_recording(path);
  // The recording began with the process: nothing before it, every allocation in it.
  CHECK(recording.segments_at_start.empty());
  CHECK(recording.preexisting.empty());
  CHECK(recording.trace.allocations() == trace->allocations());
  CHECK(recording.trace.live_lower_bound == trace->live_lower_bound);
  CHECK_FALSE(recording.segment_events.empty());
  CHECK_FALSE(recording.segments_at_end.empty());  // the snapshot is taken before the process exits
  const ReplayCheck check = replay_check(recording, 1024_GiB);
  INFO(check.divergence.value_or("") << check.final_state.value_or(""));
  CHECK(check.addresses_compared == trace->allocations());
  CHECK(check.exact());
}

TEST_CASE("memory-viz: every policy's snapshot tiles its segments and agrees with its trace replayed backwards",
          "[memory-viz]") {
  test::TempDir dir;
  std::string files;
  for (std::size_t index = 0; index < all_policies().size(); ++index) {
    const std::string policy(all_policies()[index].name);
    CAPTURE(policy);
    RandomTraceOptions options;
    options.events = 400;
    options.seed = 7 + index;
    options.max_bytes = 24_MiB;
    options.target_live = 200_MiB;
    const auto trace = std::make_shared<const Trace>(make_random_trace(options, "random"));
    Scenario scenario = scenario_of({{trace, policy}}, 1_GiB);
    scenario.on_oom = OnOom::continue_run;
    MemoryVizExport exporter(scenario);
    Observer* observers[] = {&exporter};
    run(scenario, observers);
    const std::string path = dir.file(policy + ".pickle");
    std::ofstream out(path, std::ios::binary);
    exporter.write(out);
    files += " '" + path + "'";
  }
  const std::filesystem::path tool =
      std::filesystem::path(ALLOCSIM_README).parent_path() / "tools" / "check_memory_viz.py";
  CHECK(std::system(("python3 '" + tool.string() + "'" + files + " > /dev/null").c_str()) == 0);  // one Python for all
}

TEST_CASE("memory-viz: an OOM is an oom entry with the device's free bytes, after the releases it made",
          "[memory-viz]") {
  test::TempDir dir;
  const auto trace = std::make_shared<const Trace>(load_workload(kModel));
  RunResult result;
  const std::string path = export_run(dir, scenario_of({{trace, "caching"}}, 64_MiB), nullptr, &result);
  REQUIRE(result.tenants.front().oom_count == 1);
  CHECK(viewer_check(path));
  const TorchRecording recording = read_torch_recording(path);
  REQUIRE(recording.ooms.size() == 1);
  CHECK(recording.ooms.front().device_free == result.tenants.front().ooms.front().context.device_available);
  CHECK(recording.ooms.front().before_event == result.tenants.front().ooms.front().event);
}

TEST_CASE("memory-viz: each tenant is one device of the snapshot", "[memory-viz]") {
  test::TempDir dir;
  const auto trace = std::make_shared<const Trace>(load_workload(kModel));
  const std::string path = export_run(dir, scenario_of({{trace, "caching"}, {trace, "bfc"}}, 16_GiB));
  CHECK(viewer_check(path));
  const TorchRecording second = read_torch_recording(path, 1);
  CHECK(second.trace.allocations() == trace->allocations());
  CHECK_THROWS_AS(read_torch_recording(path), Error);  // two devices with traces: the reader asks which
}

// A device whose addresses lie far above 2^53, as a driver's might: `offset` added to each.
class HighAddressDevice final : public ForwardingDevice {
 public:
  HighAddressDevice(Device& inner, Addr offset, Addr step) : ForwardingDevice(inner), offset_(offset), step_(step) {}
  std::optional<Segment> malloc(Bytes bytes) override {
    auto segment = ForwardingDevice::malloc(bytes);
    if (!segment) return segment;
    const Addr shift = offset_ + step_ * mallocs_++;
    shifts_[segment->addr + shift] = shift;
    return Segment{segment->addr + shift, segment->bytes};
  }
  void free(Segment segment) override {
    const Addr shift = shifts_.at(segment.addr);
    shifts_.erase(segment.addr);
    ForwardingDevice::free(Segment{segment.addr - shift, segment.bytes});
  }

 private:
  Addr offset_;
  Addr step_;  // added per malloc: spreads the segments apart
  std::size_t mallocs_ = 0;
  std::map<Addr, Addr> shifts_;
};

TEST_CASE("memory-viz: addresses are rebased below 2^53, and a run wider than that is refused", "[memory-viz]") {
  test::TempDir dir;
  const auto trace = std::make_shared<const Trace>(load_workload(kModel));
  const Scenario scenario = scenario_of({{trace, "caching"}}, 16_GiB);
  SimDevice sim(scenario.device);
  HighAddressDevice high(sim, Addr{0x7f} << 56, 0);
  const std::string path = export_run(dir, scenario, &high);
  CHECK(viewer_check(path));  // every integer in [0, 2^53)
  const TorchRecording recording = read_torch_recording(path);
  Addr lowest = ~Addr{0};
  for (const RecordedSegmentEvent& event : recording.segment_events) lowest = std::min(lowest, event.addr);
  CHECK(lowest >= 1_GiB);
  CHECK(lowest < 2_GiB);
  CHECK(replay_check(recording, 1024_GiB).exact());

  SimDevice sim_wide(scenario.device);
  HighAddressDevice wide(sim_wide, 0, Addr{1} << 52);  // the third segment lies 2^53 above the first
  MemoryVizExport exporter(scenario);
  Observer* observers[] = {&exporter};
  run_on(wide, scenario, observers);
  std::ostringstream out;
  CHECK_THROWS_WITH(exporter.write(out), Catch::Contains("2^53"));
}

}  // namespace
}  // namespace allocsim
