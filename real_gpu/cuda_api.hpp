// Opening the GPU. Built with the CUDA runtime when CMake found the toolkit
// (cuda_api.cpp), as a stub that says so otherwise (cuda_missing.cpp); either way the
// rest of allocsim calls the same three functions.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "real_gpu/device_api.hpp"

namespace allocsim {

// Whether this allocsim was built with the CUDA runtime.
bool built_with_cuda();

// The device API of GPU `ordinal` with its context created and warmed up (so later
// cudaMemGetInfo deltas show allocations, not lazily loaded modules), or an Error whose
// one line says what is missing: CUDA support in this build, the driver, or a GPU.
std::unique_ptr<DeviceApi> open_cuda_device(int ordinal = 0);

// The one line for a failed cudaGetDeviceCount: code is the cudaError_t value, name and
// text what cudaGetErrorName/String said. Pure, so tests need no CUDA.
std::string describe_cuda_unavailable(int code, std::string_view name, std::string_view text);

}  // namespace allocsim
