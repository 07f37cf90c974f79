#include "studies/chrome_trace_export.hpp"

#include <algorithm>
#include <map>
#include <memory>
#include <set>
#include <sstream>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "policies/registry.hpp"
#include "workloads/catalogue.hpp"

namespace allocsim {
namespace {

using nlohmann::json;

constexpr const char* kModel = "resnet50_b2_nows_steps1";

struct Exported {
  RunResult result;
  json trace;
};

Exported export_run(const Scenario& scenario, std::size_t max_lifetimes = ChromeTraceExport::kMaxLifetimes) {
  ChromeTraceExport exporter(scenario, max_lifetimes);
  Observer* observers[] = {&exporter};
  Exported exported{run(scenario, observers), {}};
  std::ostringstream out;
  exporter.write(out);
  exported.trace = json::parse(out.str());  // throws on anything that is not JSON
  return exported;
}

Scenario two_tenants(Bytes capacity) {
  const auto trace = std::make_shared<const Trace>(load_workload(kModel));
  Scenario scenario;
  scenario.device.capacity = capacity;
  scenario.tenants = {TenantSpec{trace, policy_maker("caching"), 0}, TenantSpec{trace, policy_maker("bfc"), 0}};
  return scenario;
}

// The largest value of counter `name`'s key `key` in process `pid`.
std::uint64_t counter_max(const json& events, const std::string& name, const std::string& key, int pid) {
  std::uint64_t most = 0;
  for (const json& event : events) {
    if (event["ph"] == "C" && event["name"] == name && event["pid"] == pid) most = std::max(most, event["args"][key].get<std::uint64_t>());
  }
  return most;
}

TEST_CASE("chrome-trace: a named process per tenant, byte counters whose peaks are the run's", "[chrome-trace]") {
  const Exported exported = export_run(two_tenants(16_GiB));
  const json& events = exported.trace.at("traceEvents");
  std::map<int, std::string> names;
  for (const json& event : events) {
    if (event["ph"] == "M" && event["name"] == "process_name") names[event["pid"]] = event["args"]["name"];
  }
  REQUIRE(names.size() == 3);  // the device and two tenants
  CHECK_THAT(names[0], Catch::StartsWith("device"));
  CHECK(names[1] == std::string("tenant 0: ") + kModel + " @ caching");
  CHECK(names[2] == std::string("tenant 1: ") + kModel + " @ bfc");
  for (std::size_t t = 0; t < 2; ++t) {
    const TenantResult& tenant = exported.result.tenants[t];
    const int pid = static_cast<int>(t) + 1;
    CHECK(counter_max(events, "memory", "allocated", pid) == tenant.peak_allocated);
    CHECK(counter_max(events, "memory", "reserved", pid) == tenant.peak_reserved);
  }
  const std::uint64_t device_used = counter_max(events, "device", "used", 0);
  CHECK(device_used <= exported.result.peak_device);
  CHECK(device_used >= exported.result.tenants[0].peak_reserved + exported.result.tenants[1].peak_reserved / 2);
}

TEST_CASE("chrome-trace: every allocation is an async slice under the cap, each begin with its end", "[chrome-trace]") {
  const Exported exported = export_run(two_tenants(16_GiB));
  const json& events = exported.trace.at("traceEvents");
  std::map<std::string, int> open;
  std::size_t slices = 0;
  for (const json& event : events) {
    if (event["ph"] == "b") {
      CHECK(open[event["id"]]++ == 0);
      ++slices;
    } else if (event["ph"] == "e") {
      CHECK(open[event["id"]]-- == 1);
    }
  }
  for (const auto& [id, count] : open) CHECK(count == 0);
  const std::size_t allocations = 2 * load_workload(kModel).allocations();
  REQUIRE(allocations < ChromeTraceExport::kMaxLifetimes);
  CHECK(slices == allocations);
  const json& meta = exported.trace.at("otherData");
  CHECK(meta.at("lifetimes_cap") == ChromeTraceExport::kMaxLifetimes);
  CHECK(meta.at("lifetimes_total") == allocations);
  CHECK(meta.at("counter_unit") == "bytes");
}

// The block sizes of the slices, largest first.
std::vector<std::uint64_t> slice_sizes(const json& events) {
  std::vector<std::uint64_t> sizes;
  for (const json& event : events) {
    if (event["ph"] == "b") sizes.push_back(event["args"]["size_bytes"].get<std::uint64_t>());
  }
  std::sort(sizes.rbegin(), sizes.rend());
  return sizes;
}

TEST_CASE("chrome-trace: past the cap, the largest allocations are kept and the file says how many there were",
          "[chrome-trace]") {
  const Exported all = export_run(two_tenants(16_GiB));
  const Exported capped = export_run(two_tenants(16_GiB), 50);
  std::vector<std::uint64_t> largest = slice_sizes(all.trace.at("traceEvents"));
  REQUIRE(largest.size() > 50);
  largest.resize(50);
  CHECK(slice_sizes(capped.trace.at("traceEvents")) == largest);
  CHECK(capped.trace.at("otherData").at("lifetimes_cap") == 50);
  CHECK(capped.trace.at("otherData").at("lifetimes_shown") == 50);
  CHECK(capped.trace.at("otherData").at("lifetimes_total") == all.trace.at("otherData").at("lifetimes_total"));
}

TEST_CASE("chrome-trace: an OOM is an instant event on its tenant, with its verdict", "[chrome-trace]") {
  const Exported exported = export_run(two_tenants(160_MiB));
  const json& events = exported.trace.at("traceEvents");
  std::size_t instants = 0;
  for (const json& event : events) {
    if (event["ph"] != "i") continue;
    ++instants;
    CHECK_THAT(event["name"].get<std::string>(), Catch::StartsWith("OOM ("));
    CHECK(event["args"].contains("requested_bytes"));
  }
  std::size_t ooms = 0;
  for (const TenantResult& tenant : exported.result.tenants) ooms += tenant.oom_count;
  REQUIRE(ooms > 0);
  CHECK(instants == ooms);
}

}  // namespace
}  // namespace allocsim
