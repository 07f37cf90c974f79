// direct: no allocator at all. Every request goes to the device and every free back.
//
// Models what frameworks do with caching off: TensorFlow's `cuda_malloc` allocator
// (TF_GPU_ALLOCATOR=cuda_malloc), JAX's `platform` allocator
// (XLA_PYTHON_CLIENT_ALLOCATOR=platform), PyTorch with PYTORCH_NO_CUDA_MEMORY_CACHING=1.
// - a request of B bytes is one device malloc of B rounded up to the device granularity;
// - a free is one device free; nothing is cached, so reserved == allocated always;
// - a zero-byte request gets a zero-size block and no device call (cudaMalloc(0)).
// Deviation: real cudaMalloc also pays for alignment inside its pages; the granularity
// option of the device is where that is modelled.
#pragma once

#include <array>

#include "sim/device.hpp"
#include "sim/policy.hpp"
#include "sim/spec.hpp"

namespace allocsim {

class DirectPolicy final : public Policy {
 public:
  Bytes rounded_size(Bytes requested) const override { return align_up(requested, granularity_); }
  static constexpr std::array<ParamInfo, 0> kParams{};

  struct Settings {};  // no parameters
  static Settings settings(const Params&) { return {}; }

  DirectPolicy(const Settings& settings, Device& device);

  // Defined here, not in direct.cpp, so that the registry's direct loop inlines them: the
  // whole policy is a device call each, and the call around it showed in tools/bench_ab.
  Allocation allocate(const Request& request) override {
    if (request.bytes == 0) return Block{0, 0, 0, request.id, request.stream};
    const Bytes size = align_up(request.bytes, granularity_);
    const auto segment = device_.malloc(size);
    if (!segment) return std::nullopt;
    allocated_ += size;
    return Block{segment->addr, size, request.bytes, request.id, request.stream};
  }
  void deallocate(const Block& block, Nanos) override {
    if (block.size == 0) return;
    device_.free(Segment{block.addr, block.size});
    allocated_ -= block.size;
  }
  PolicyStats stats() const override;

 private:
  Device& device_;
  Bytes granularity_;  // a device property: read once, not per request
  Bytes allocated_ = 0;
};

}  // namespace allocsim
