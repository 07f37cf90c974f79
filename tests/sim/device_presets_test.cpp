// The preset table: each capacity is the total a real PyTorch OOM message printed for that
// card (two decimals of GiB), rounded down to a MiB, and names where it was read.
#include <cstdio>
#include <set>
#include <string>

#include <catch2/catch.hpp>

#include "sim/device_presets.hpp"
#include "sim/error.hpp"
#include "sim/units.hpp"

namespace allocsim {
namespace {

// The figure PyTorch prints: the capacity in GiB to two decimals.
std::string printed(Bytes capacity) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f GiB", static_cast<double>(capacity) / static_cast<double>(1_GiB));
  return text;
}

TEST_CASE("device presets: the capacity PyTorch prints, with its source", "[devices]") {
  std::set<std::string> names;
  for (const DevicePreset& preset : all_devices()) {
    CAPTURE(preset.name);
    CHECK(names.insert(std::string(preset.name)).second);
    CHECK(preset.capacity % 1_MiB == 0);
    // The source quotes the figure it gave, and printing the capacity gives it back.
    CHECK_THAT(std::string(preset.capacity_source), Catch::Contains("'" + printed(preset.capacity) + "'"));
    CHECK_THAT(std::string(preset.capacity_source), Catch::Contains("github.com/"));
    CHECK(device_spec(preset.name).capacity == preset.capacity);
  }
  // Hand-computed: 79.14 GiB = 81039.36 MiB, rounded down; 15.78 GiB = 16158.72 MiB.
  CHECK(device_spec("a100-80gb").capacity == 81039_MiB);
  CHECK(device_spec("v100-16gb").capacity == 16158_MiB);
  CHECK(device_spec("h200").capacity == 143165_MiB);  // 139.81 GiB
  // Less than what nvidia-smi counts for each card (81920 MiB on an A100 80GB, 15360 on a T4).
  CHECK(device_spec("a100-80gb").capacity < 81920_MiB);
  CHECK(device_spec("t4").capacity < 15360_MiB);
  CHECK(device_spec("rtx4090").compute_capability == 89);
  // The 48 GB cards: 47.54 GiB = 48680.96 MiB and 44.42 GiB = 45486.08 MiB, rounded down; the
  // A6000's under the 49140 MiB nvidia-smi shows for it. sm_86 and sm_89.
  CHECK(device_spec("rtx-a6000").capacity == 48680_MiB);
  CHECK(device_spec("rtx-a6000").capacity < 49140_MiB);
  CHECK(device_spec("rtx-a6000").compute_capability == 86);
  CHECK(device_spec("l40s").capacity == 45486_MiB);
  CHECK(device_spec("l40s").compute_capability == 89);
  CHECK_THROWS_WITH(device_spec("a100"), Catch::Contains("valid devices: t4,") && Catch::Contains("rtx4090"));
}

}  // namespace
}  // namespace allocsim
