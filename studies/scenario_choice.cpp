#include "studies/scenario_choice.hpp"

#include <array>
#include <bit>
#include <optional>
#include <string_view>
#include <utility>

#include "sim/cost_profile.hpp"
#include "sim/device_presets.hpp"
#include "sim/error.hpp"
#include "studies/sweep_grid.hpp"

namespace allocsim {

std::vector<DeviceSpec> chosen_devices(const DeviceChoice& choice) {
  const std::vector<std::string> presets =
      choice.presets.empty() ? std::vector<std::string>{""} : split_list(choice.presets, "--device");
  std::vector<std::optional<Bytes>> capacities{std::nullopt};
  if (!choice.capacities.empty()) {
    capacities.clear();
    for (Bytes capacity : parse_size_list(choice.capacities, "--capacity")) {
      if (capacity == 0) throw Error("--capacity must be more than 0 bytes");
      capacities.emplace_back(capacity);
    }
  }
  // Assigned where given, not built by a conditional expression: that form GCC 12 flags as
  // maybe-uninitialized once a unity build inlines it.
  std::optional<Bytes> context;
  if (!choice.context.empty()) context = parse_bytes(choice.context);
  std::optional<Bytes> granularity;
  if (!choice.granularity.empty()) granularity = parse_granularity(choice.granularity);
  std::optional<CostModel> cost;
  if (!choice.cost_profile.empty()) cost = load_cost_profile(choice.cost_profile).cost;

  std::vector<DeviceSpec> devices;
  for (const std::string& preset : presets) {
    const DeviceSpec base = preset.empty() ? DeviceSpec{} : device_spec(preset);  // throws listing the valid names
    for (const std::optional<Bytes>& capacity : capacities) {
      DeviceSpec device = base;
      if (capacity) device.capacity = *capacity;
      if (context) device.context_overhead = *context;
      if (granularity) device.granularity = *granularity;
      if (cost) device.cost = *cost;
      devices.push_back(device);
    }
  }
  return devices;
}

Bytes parse_granularity(const std::string& text) {
  Bytes granularity = 0;
  try {
    granularity = parse_bytes(text);
  } catch (const Error& error) {
    throw Error("--granularity: " + std::string(error.what()));
  }
  if (!std::has_single_bit(granularity)) {
    throw Error("--granularity " + text + " is not a power of two (pages are: 1B, 4KiB, 2MiB, ...)");
  }
  return granularity;
}

TenantChoice parse_tenant(const std::string& text) {
  static constexpr std::string_view kStart = "@start=";
  std::string rest = text;
  Nanos start = 0;
  if (const auto option = rest.rfind(kStart); option != std::string::npos) {
    try {
      start = parse_nanos(std::string_view(rest).substr(option + kStart.size()));
    } catch (const Error& error) {
      throw Error("--tenant '" + text + "': " + error.what());
    }
    rest.resize(option);
  }
  const auto at = rest.rfind('@');
  if (at == std::string::npos || at == 0 || at + 1 == rest.size()) {
    throw Error("--tenant '" + text + "' is not WORKLOAD@POLICY or WORKLOAD@POLICY@start=TIME");
  }
  PolicySpec policy = parse_policy_spec(rest.substr(at + 1));
  return TenantChoice{parse_workload_spec(rest.substr(0, at)), std::move(policy), start};
}

std::string to_string(const TenantChoice& tenant) {
  std::string text = tenant.workload.text + "@" + tenant.policy.text;
  if (tenant.start == 0) return text;
  static constexpr std::array<std::pair<Nanos, std::string_view>, 3> kUnits{{{1'000'000'000, "s"}, {1'000'000, "ms"},
                                                                              {1'000, "us"}}};
  for (const auto& [nanos, unit] : kUnits) {
    if (tenant.start % nanos == 0) return text + "@start=" + std::to_string(tenant.start / nanos) + std::string(unit);
  }
  return text + "@start=" + std::to_string(tenant.start) + "ns";
}

DeviceSpec chosen_device(const DeviceChoice& choice) {
  std::vector<DeviceSpec> devices = chosen_devices(choice);
  if (devices.size() != 1) throw Error("this command runs on one device; --device and --capacity name " +
                                       std::to_string(devices.size()) + " (use `allocsim sweep` for lists)");
  return devices.front();
}

}  // namespace allocsim
