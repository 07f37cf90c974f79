// A host stand-in card for the real-GPU tests: its memory, the context in use from the
// start, 2 MiB VMM pages, and whether its memory is real host memory (to write and read).
#pragma once

#include "real_gpu/host_api.hpp"

namespace allocsim::test {

inline HostDeviceConfig host_card(Bytes total, Bytes context, bool backed) {
  HostDeviceConfig config;
  config.total = total;
  config.context = context;
  config.page = 2_MiB;
  config.backed = backed;
  return config;
}

}  // namespace allocsim::test
