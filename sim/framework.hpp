// Which framework's code an allocator or a file comes from: a field of the policy
// registry's rows and of the workload catalogue's readers, and what a model is lowered for.
#pragma once

#include <cstdint>

namespace allocsim {

// torch and tf are also a model's framework token (workloads/model/lower.hpp: PyTorch 2.x
// eager, TensorFlow 2 / Keras). cuda: CUDA's own allocator (cudaMallocAsync's pool), whichever
// framework turns it on. none: no framework's code (textbook and research policies, our own
// trace formats).
enum class Framework : std::uint8_t { torch, tf, jax, rmm, cuda, none };

}  // namespace allocsim
