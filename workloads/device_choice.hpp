// Which device's events a reader keeps when a recording holds several (Kineto traces,
// TensorFlow memory logs), chosen as the snapshot reader chooses: LoadOptions::cuda_device,
// else the only device with events.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>

#include "sim/error.hpp"

namespace allocsim {

// `events`: device -> how many events it has. Throws Error (prefixed by `name`) when the
// wanted device has none, or when none is wanted and not exactly one device has events.
inline int choose_device(const std::map<int, std::size_t>& events, std::optional<int> wanted, const std::string& name,
                         const std::string& what) {
  std::string listed;
  for (const auto& [device, count] : events) {
    listed += (listed.empty() ? "" : ", ") + std::to_string(device) + " (" + std::to_string(count) + " " + what + ")";
  }
  if (wanted) {
    if (!events.contains(*wanted)) {
      throw Error(name + ": no " + what + " on device " + std::to_string(*wanted) +
                  (events.empty() ? "" : " (devices with them: " + listed + ")"));
    }
    return *wanted;
  }
  if (events.size() > 1) {
    throw Error(name + ": " + std::to_string(events.size()) + " devices have " + what + ": " + listed +
                "; choose one with --cuda-device N");
  }
  if (events.empty()) throw Error(name + ": no " + what + " of a GPU");
  return events.begin()->first;
}

}  // namespace allocsim
