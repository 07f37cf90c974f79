// Named devices for --device. Capacity is the total that cudaMemGetInfo reports for the
// card, which PyTorch prints as "total capacity" in its OOM message (in GiB with two
// decimals: the preset holds that printed figure, so it is exact only to 0.005 GiB). It is
// less than nvidia-smi's total, which counts memory the driver keeps. The context overhead is an estimate (the reference marks it
// unconfirmed: it depends on driver, CUDA version and lazy module loading); measure it on
// hardware and override with --context. Physical pages are modelled as 2 MiB.
#pragma once

#include <span>
#include <string_view>

#include "sim/sim_device.hpp"

namespace allocsim {

struct DevicePreset {
  std::string_view name;
  std::string_view summary;
  Bytes capacity;
  std::string_view capacity_source;  // where the capacity figure was read
  Bytes context_overhead;
  int compute_capability;  // major * 10 + minor: 75 for sm_75
};

std::span<const DevicePreset> all_devices();

// A DeviceSpec for a preset; throws Error listing the valid names.
DeviceSpec device_spec(std::string_view preset_name);

}  // namespace allocsim
