// The model zoo: torchvision's ResNets, VGG-16 and MobileNetV2, and the seed article's
// small CNN, each built op by op as its forward() runs, with the framework's layer names.
#pragma once

#include <span>
#include <string_view>

#include "workloads/model/graph.hpp"

namespace allocsim {

struct ZooModel {
  std::string_view name;
  std::string_view summary;
  Model (*build)();
};

std::span<const ZooModel> zoo();
const ZooModel* find_zoo_model(std::string_view name);  // nullptr when unknown

}  // namespace allocsim
