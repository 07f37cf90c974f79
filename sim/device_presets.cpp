#include "sim/device_presets.hpp"

#include <array>
#include <string>

#include "sim/error.hpp"

namespace allocsim {
namespace {

constexpr Bytes kContextEstimate = 500_MiB;
constexpr Bytes kPage = 2_MiB;

constexpr std::array kDevices{
    DevicePreset{"t4", "NVIDIA T4, 16 GB GDDR6", 15360_MiB, kContextEstimate, 75},
    DevicePreset{"v100-16gb", "NVIDIA V100 SXM2 16 GB", 16160_MiB, kContextEstimate, 70},
    DevicePreset{"v100-32gb", "NVIDIA V100 SXM2 32 GB", 32510_MiB, kContextEstimate, 70},
    DevicePreset{"rtx3090", "NVIDIA GeForce RTX 3090, 24 GB", 24576_MiB, kContextEstimate, 86},
    DevicePreset{"a100-40gb", "NVIDIA A100 SXM4 40 GB", 40960_MiB, kContextEstimate, 80},
    DevicePreset{"a100-80gb", "NVIDIA A100 SXM4 80 GB", 81920_MiB, kContextEstimate, 80},
    DevicePreset{"h100-80gb", "NVIDIA H100 SXM5 80 GB HBM3", 81559_MiB, kContextEstimate, 90},
    DevicePreset{"h200", "NVIDIA H200 141 GB HBM3e", 143771_MiB, kContextEstimate, 90},
};

}  // namespace

std::span<const DevicePreset> all_devices() { return kDevices; }

DeviceSpec device_spec(std::string_view preset_name) {
  for (const DevicePreset& preset : kDevices) {
    if (preset.name != preset_name) continue;
    DeviceSpec spec;
    spec.name = std::string(preset.name);
    spec.capacity = preset.capacity;
    spec.context_overhead = preset.context_overhead;
    spec.granularity = kPage;
    spec.compute_capability = preset.compute_capability;
    return spec;
  }
  std::string valid;
  for (const DevicePreset& preset : kDevices) valid += (valid.empty() ? "" : ", ") + std::string(preset.name);
  throw Error("unknown device '" + std::string(preset_name) + "'; valid devices: " + valid);
}

}  // namespace allocsim
