#include "real_gpu/cuda_api.hpp"
#include "app/backend.hpp"
#include "real_gpu/host_api.hpp"
#include "sim/error.hpp"

namespace allocsim {

std::unique_ptr<DeviceApi> open_backend(const BackendChoice& choice) {
  if (choice.backend == "cuda") return open_cuda_device(choice.gpu);
  if (choice.backend == "host") {
    HostDeviceConfig config;
    config.total = choice.host_memory;
    if (config.total <= config.context) {
      throw Error("--host-memory " + format_bytes(config.total) + " must exceed the stand-in's context of " +
                  format_bytes(config.context));
    }
    return std::make_unique<HostDeviceApi>(config);
  }
  throw Error("--backend " + choice.backend + " is not cuda or host");
}

}  // namespace allocsim
