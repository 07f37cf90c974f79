// The framework's own allocations during lowering (runtime_allocations.hpp): cuBLAS
// workspaces and DistributedDataParallel's buffers.
#include <algorithm>
#include <vector>

#include "workloads/model/lowering.hpp"
#include "workloads/model/runtime_allocations.hpp"

namespace allocsim::lowering {

// A cuBLAS call on a thread whose handle has no workspace yet makes one, kept.
void Lowering::cublas_call(Node node, bool& has_workspace) {
  const OpKind kind = op(node).kind;
  if (has_workspace || !traces_runtime() || (kind != OpKind::linear && kind != OpKind::matmul)) return;
  alloc(cublas_workspace_bytes(options_.compute_capability), Tag::runtime, "cublas_workspace");
  has_workspace = true;
}

// DistributedDataParallel(model) after the weights are on the device: its first
// collective creates the NCCL communicator, the weights are broadcast from rank 0 in
// coalesced pieces, then the Reducer makes its buckets.
void Lowering::wrap_in_ddp() {
  alloc(kNcclBuffersEstimate, Tag::runtime, "nccl_buffers");
  std::vector<Bytes> parameters;
  for (auto weight = weights_.rbegin(); weight != weights_.rend(); ++weight) {
    parameters.push_back(builder_.bytes_of(weight->second));
  }
  Bytes total = 0;
  for (const Bytes bytes : parameters) total += bytes;
  for (Bytes left = total; left > 0;) {
    const Bytes piece = std::min(left, kDdpBroadcastBucketBytes);
    free(alloc(piece, Tag::runtime, "ddp_broadcast"));
    left -= piece;
  }
  const Bytes cap = static_cast<Bytes>(options_.ddp_bucket_mib) * 1_MiB;
  for (const Bytes bucket : ddp_bucket_bytes(parameters, cap)) alloc(bucket, Tag::runtime, "ddp_bucket");
}

}  // namespace allocsim::lowering
