// The build without the CUDA toolkit: everything but opening a GPU works.
#include "real_gpu/cuda_api.hpp"
#include "sim/error.hpp"

namespace allocsim {

bool built_with_cuda() { return false; }

std::unique_ptr<DeviceApi> open_cuda_device(int) {
  throw Error("this allocsim was built without CUDA support (CMake found no CUDA toolkit); "
              "rebuild on a machine with the toolkit (nvcc, cuda_runtime.h) to use a GPU, or use --backend host");
}

}  // namespace allocsim
