#include "real_gpu/cuda_api.hpp"

namespace allocsim {

std::string describe_cuda_unavailable(int code, std::string_view name, std::string_view text) {
  // cudaErrorInsufficientDriver (35) and cudaErrorNoDevice (100) have stable values; the
  // rest keep CUDA's own words.
  std::string what;
  switch (code) {
    case 35:
      what = "no usable NVIDIA driver (libcuda.so missing or older than this CUDA runtime)";
      break;
    case 100:
      what = "no CUDA GPU on this machine";
      break;
    default:
      what = "the CUDA runtime cannot open a GPU";
      break;
  }
  return what.append(": cudaGetDeviceCount returned ").append(name).append(" (").append(text).append(")");
}

}  // namespace allocsim
