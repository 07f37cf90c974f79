#include "workloads/model/runtime_allocations.hpp"

namespace allocsim {

Bytes cublas_workspace_bytes(int compute_capability) {
  if (compute_capability / 10 == 9) return 32_MiB;
  return 2 * 4096_KiB + 8 * 16_KiB;
}

std::vector<Bytes> ddp_bucket_bytes(std::span<const Bytes> parameter_bytes, Bytes bucket_cap) {
  std::vector<Bytes> buckets;
  Bytes open = 0;
  for (const Bytes bytes : parameter_bytes) {
    open += bytes;
    if (open >= (buckets.empty() ? kDdpFirstBucketBytes : bucket_cap)) {
      buckets.push_back(open);
      open = 0;
    }
  }
  if (open > 0) buckets.push_back(open);
  return buckets;
}

Bytes cudnn_benchmark_trial_bytes(std::int64_t weight_elements, std::int64_t out_channels,
                                  std::int64_t output_positions, std::int64_t batch, Bytes element_bytes) {
  if (out_channels < 1) return 0;
  const auto column = static_cast<Bytes>(weight_elements / out_channels);  // input channels x k x k
  return column * static_cast<Bytes>(output_positions) * static_cast<Bytes>(batch) * element_bytes;
}

}  // namespace allocsim
