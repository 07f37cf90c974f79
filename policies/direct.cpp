#include "policies/direct.hpp"

namespace allocsim {

DirectPolicy::DirectPolicy(const Settings&, Device& device) : device_(device), granularity_(device.granularity()) {}

PolicyStats DirectPolicy::stats() const {
  return PolicyStats{.allocated = allocated_, .reserved = allocated_};
}

}  // namespace allocsim
