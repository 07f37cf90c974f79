// Where `validate` and `calibrate` run: on the GPU through the CUDA runtime (--backend
// cuda, the default) or on the host stand-in (--backend host), which shows the output's
// shape anywhere.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "real_gpu/device_api.hpp"

namespace allocsim {

struct BackendChoice {
  std::string backend = "cuda";  // cuda | host
  int gpu = 0;                   // the CUDA device ordinal
  Bytes host_memory = 80_GiB;    // the host stand-in's total memory
};

// How a command obtains its device API; tests pass their own.
using DeviceOpener = std::function<std::unique_ptr<DeviceApi>(const BackendChoice&)>;

// The CLI's opener: the GPU through the CUDA runtime, or an unbacked host stand-in.
std::unique_ptr<DeviceApi> open_backend(const BackendChoice& choice);

}  // namespace allocsim
