// What a framework process allocates besides the model, through the allocator the trace
// feeds (Tag::runtime). Each size follows the source named beside it; the lowering
// (lower.cpp) places the requests where the framework makes them.
//
// - cuBLAS workspace: PyTorch gives every (cuBLAS handle, stream) pair a workspace from its
//   caching allocator at the handle's first use, kept for the process's life
//   (aten/src/ATen/cuda/CublasHandlePool.cpp: setWorkspaceForHandle, getNewWorkspace).
//   Handles are per thread (a thread-local pool window), and autograd runs backward on its
//   own device thread: a training process holds two, forward's and backward's.
// - cuDNN benchmark trials (torch.backends.cudnn.benchmark): the first time a convolution
//   of a shape runs, each pass searches its algorithms with one workspace as large as the
//   largest it tries, freed after (aten/src/ATen/native/cudnn/Conv_v7.cpp:
//   getMaxWorkspaceSize, findAlgorithms). The sizes are cuDNN's, per GPU: an estimate.
// - DistributedDataParallel: one flat gradient tensor per bucket, made at construction and
//   kept (torch/csrc/distributed/c10d/reducer.cpp, initialize_buckets), parameters in
//   reverse order, the first bucket capped at 1 MiB and the rest at bucket_cap_mb
//   (torch/nn/parallel/distributed.py: _DEFAULT_FIRST_BUCKET_BYTES, bucket_cap_mb=25);
//   the construction's broadcast of the weights in coalesced pieces of at most 250 MiB
//   (broadcast_bucket_size); NCCL's own buffers (an estimate, below).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "sim/units.hpp"

namespace allocsim {

// PyTorch's default CUBLAS_WORKSPACE_CONFIG, ":4096:2:16:8" (2 x 4096 KiB + 8 x 16 KiB =
// 8,519,680 B), or 32 MiB on Hopper (compute capability 9.x): parseChosenWorkspaceSize.
Bytes cublas_workspace_bytes(int compute_capability);

// The flat gradient tensors of DDP's buckets: `parameter_bytes` in the order DDP fills them
// (the model's parameters reversed); a bucket closes once it holds at least its cap
// (compute_bucket_assignment_by_size): 1 MiB for the first, `bucket_cap` after.
std::vector<Bytes> ddp_bucket_bytes(std::span<const Bytes> parameter_bytes, Bytes bucket_cap);

constexpr Bytes kDdpFirstBucketBytes = 1_MiB;        // dist._DEFAULT_FIRST_BUCKET_BYTES
constexpr std::int64_t kDdpDefaultBucketMib = 25;    // DistributedDataParallel(bucket_cap_mb=25)
constexpr Bytes kDdpBroadcastBucketBytes = 250_MiB;  // DDP's broadcast_bucket_size

// An estimate, not a measurement: NCCL allocates its buffers itself (cudaMalloc, outside the
// caching allocator), NCCL_BUFFSIZE (4 MiB by default) for each channel and ring neighbour;
// with two channels and two neighbours, 16 MiB. The channel count depends on the GPUs and
// links NCCL finds. Traced as one runtime request at the communicator's creation.
constexpr Bytes kNcclBuffersEstimate = 2 * 2 * 4_MiB;

// The largest workspace a benchmark-mode search tries for one convolution pass: explicit
// GEMM's im2col matrix, (input channels x k x k) x (batch x output positions) elements.
// An estimate of cuDNN's sizes; PyTorch skips algorithms larger than the allocator's
// largest free block, where this model requests the estimate and may fail.
Bytes cudnn_benchmark_trial_bytes(std::int64_t weight_elements, std::int64_t out_channels,
                                  std::int64_t output_positions, std::int64_t batch, Bytes element_bytes);

}  // namespace allocsim
