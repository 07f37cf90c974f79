// The one check for CUDA calls (runtime and driver API alike): a failure becomes an
// Error naming the call, the error and where it was made. Only real_gpu/ includes it.
#pragma once

#include <cuda.h>
#include <cuda_runtime_api.h>

#include <string>

#include "sim/error.hpp"

namespace allocsim::cuda_detail {

// The driver's cuGetErrorName, found at run time (nothing links libcuda.so); null until then.
inline CUresult (*driver_error_name)(CUresult, const char**) = nullptr;

[[noreturn]] inline void fail(const std::string& what, const char* call, const char* file, int line) {
  throw Error(std::string("CUDA error ").append(what).append(" in ").append(call).append(" at ").append(file).append(
      ":").append(std::to_string(line)));
}

inline void check(cudaError_t status, const char* call, const char* file, int line) {
  if (status == cudaSuccess) return;
  cudaGetLastError();  // clear a sticky-free error so the next call starts clean
  fail(std::string(cudaGetErrorName(status)).append(" (").append(cudaGetErrorString(status)).append(")"), call, file,
       line);
}

inline void check(CUresult status, const char* call, const char* file, int line) {
  if (status == CUDA_SUCCESS) return;
  const char* name = nullptr;
  if (driver_error_name) driver_error_name(status, &name);
  fail(name ? std::string(name) : "CUresult " + std::to_string(static_cast<int>(status)), call, file, line);
}

}  // namespace allocsim::cuda_detail

#define ALLOCSIM_CUDA_CHECK(call) ::allocsim::cuda_detail::check((call), #call, __FILE__, __LINE__)
