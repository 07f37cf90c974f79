// What a framework process allocates besides the model (Tag::runtime), and the steady
// state the model workloads replay by default. Expected figures are worked out in the
// comments from the sources workloads/model/runtime_allocations.hpp cites.
#include <catch2/catch.hpp>

#include <cstddef>
#include <string>
#include <vector>

#include "policies/registry.hpp"
#include "sim/engine.hpp"
#include "workloads/catalogue.hpp"
#include "workloads/model/runtime_allocations.hpp"

namespace allocsim {
namespace {

// ResNet-50: 25,557,032 parameters, fp32 (reference workloads.md §1.2).
constexpr Bytes kResNet50ParamBytes = 4 * 25'557'032;

struct RuntimeAlloc {
  std::size_t event;
  Bytes bytes;
  bool freed;
  std::string layer;
};

std::vector<RuntimeAlloc> runtime_allocs(const Trace& trace) {
  std::vector<RuntimeAlloc> found;
  std::vector<std::size_t> slot(trace.allocations(), 0);
  for (std::size_t i = 0; i < trace.events.size(); ++i) {
    const Event& event = trace.events[i];
    if (event.tag != Tag::runtime) continue;
    if (event.op == Op::alloc) {
      slot[index_of(event.id)] = found.size();
      found.push_back({i, trace.bytes_of(event.id), false, trace.layer_names[trace.layer[index_of(event.id)]]});
    } else if (event.op == Op::free) {
      found[slot[index_of(event.id)]].freed = true;
    }
  }
  return found;
}

std::size_t first_gradient(const Trace& trace) {
  for (std::size_t i = 0; i < trace.events.size(); ++i) {
    if (trace.events[i].op == Op::alloc && trace.events[i].tag == Tag::gradient) return i;
  }
  return trace.events.size();
}

Trace load_on(const std::string& spec, int compute_capability) {
  LoadOptions options;
  options.compute_capability = compute_capability;
  return load_workload(spec, options);
}

TEST_CASE("cuBLAS workspace: PyTorch's default CUBLAS_WORKSPACE_CONFIG, 32 MiB on Hopper", "[model][runtime]") {
  // ":4096:2:16:8": 2 x 4096 KiB + 8 x 16 KiB = 8,388,608 + 131,072 B.
  CHECK(cublas_workspace_bytes(70) == 8'519'680);
  CHECK(cublas_workspace_bytes(86) == 8'519'680);
  CHECK(cublas_workspace_bytes(90) == 32 * 1024 * 1024);
}

TEST_CASE("cuBLAS workspaces: forward's handle and autograd's, made once and kept", "[model][runtime]") {
  // ResNet-50's fc is its one cuBLAS user: the main thread's handle gets its workspace in the
  // first forward, autograd's device thread's in the first backward; none after.
  for (const int arch : {70, 90}) {
    const Trace trace = load_on("resnet50_b2_nows", arch);
    const std::vector<RuntimeAlloc> runtime = runtime_allocs(trace);
    REQUIRE(runtime.size() == 2);
    const std::size_t backward = first_gradient(trace);
    CHECK(runtime[0].event < backward);
    CHECK(runtime[1].event > backward);
    CHECK(runtime[1].event < trace.info.step_starts.at(1));
    for (const RuntimeAlloc& alloc : runtime) {
      CHECK(alloc.bytes == cublas_workspace_bytes(arch));
      CHECK_FALSE(alloc.freed);
      CHECK(alloc.layer == "cublas_workspace");
    }
  }
  CHECK(runtime_allocs(load_workload("resnet50_b2_nows_infer")).size() == 1);  // no backward thread
  CHECK(runtime_allocs(load_workload("resnet50_b2_nows_tf")).empty());     // outside TensorFlow's allocator
  CHECK(runtime_allocs(load_workload("resnet50_b2_nows_noruntime")).empty());
  CHECK(runtime_allocs(load_workload("bert_base_s32_b1")).size() == 2);
}

TEST_CASE("DDP buckets: 1 MiB first, then bucket_cap_mb, each closed once it holds its cap", "[model][runtime]") {
  // 600 + 600 KiB reach 1 MiB: the first bucket; 10 + 20 MiB reach 25 MiB; 10 + 5 MiB are left.
  const std::vector<Bytes> parameters{600_KiB, 600_KiB, 10_MiB, 20_MiB, 10_MiB, 5_MiB};
  CHECK(ddp_bucket_bytes(parameters, 25_MiB) == std::vector<Bytes>{1200_KiB, 30_MiB, 15_MiB});
  CHECK(ddp_bucket_bytes(parameters, 100_MiB) == std::vector<Bytes>{1200_KiB, 45_MiB});
  CHECK(ddp_bucket_bytes({}, 25_MiB).empty());
}

TEST_CASE("ddp: NCCL buffers, the weights' broadcast, then buckets holding every gradient", "[model][runtime]") {
  const Trace trace = load_workload("resnet50_b2_nows_ddp");
  const std::vector<RuntimeAlloc> runtime = runtime_allocs(trace);
  // Setup, before the first batch: NCCL (kept), one broadcast piece of all 102,228,128 B of
  // weights (under 250 MiB; freed), then the buckets (kept), then the two cuBLAS workspaces.
  REQUIRE(runtime.size() >= 4);
  CHECK(runtime[0].layer == "nccl_buffers");
  CHECK(runtime[0].bytes == kNcclBuffersEstimate);
  CHECK_FALSE(runtime[0].freed);
  CHECK(runtime[1].layer == "ddp_broadcast");
  CHECK(runtime[1].bytes == kResNet50ParamBytes);
  CHECK(runtime[1].freed);
  Bytes buckets = 0;
  std::size_t count = 0;
  for (const RuntimeAlloc& alloc : runtime) {
    if (alloc.layer != "ddp_bucket") continue;
    buckets += alloc.bytes;
    ++count;
    CHECK_FALSE(alloc.freed);
  }
  CHECK(buckets == kResNet50ParamBytes);
  // 97.5 MiB of gradients: at least four buckets of 25 MiB (1 MiB first), fewer with larger caps.
  CHECK(count >= 4);
  std::size_t wide = 0;
  for (const RuntimeAlloc& alloc : runtime_allocs(load_workload("resnet50_b2_nows_ddp100"))) {
    wide += alloc.layer == "ddp_bucket";
  }
  CHECK(wide < count);
  CHECK(runtime_allocs(load_workload("resnet50_b2_nows_ddp_infer")).size() == 1);  // DDP is for training
  CHECK_THROWS_WITH(load_workload("resnet50_b2_ddp_tf"), Catch::Contains("PyTorch's"));
  CHECK_THROWS_WITH(load_workload("resnet50_b2_benchmark_tf"), Catch::Contains("PyTorch's"));
}

TEST_CASE("benchmark: each convolution shape and pass tries one im2col-sized workspace in step 1", "[model][runtime]") {
  // conv1: 64 x 3 x 7 x 7 weights (147 columns per output channel) over 112 x 112 outputs,
  // batch 2, fp32: 147 x 12,544 x 2 x 4 = 14,751,744 B.
  CHECK(cudnn_benchmark_trial_bytes(64 * 3 * 7 * 7, 64, 112 * 112, 2, 4) == 14'751'744);
  const Trace trace = load_on("resnet50_b2_nows_benchmark", 70);
  std::size_t trials = 0;
  for (const RuntimeAlloc& alloc : runtime_allocs(trace)) {
    if (alloc.layer == "cublas_workspace") continue;
    ++trials;
    CHECK(alloc.freed);
    CHECK(alloc.event < trace.info.step_starts.at(1));  // cached for the steps after
    if (trials == 1) {
      CHECK(alloc.layer == "conv1");
      CHECK(alloc.bytes == 14'751'744);
    }
  }
  // ResNet-50 has 23 distinct convolution shapes of 53, as PyTorch's benchmark cache keys
  // them (input, weight and output sizes): the stem; layer1: block 0's conv1, conv2 and conv3
  // (its downsample, 64 -> 256 over the same 64 x 56 x 56 input, is conv3's shape), block 1's
  // conv1; layers 2-4: block 0's conv1, conv2, conv3 and downsample, block 1's conv1 and
  // conv2. So 23 forward, 22 backward-data (the stem needs no input gradient) and 23
  // backward-filter searches.
  CHECK(trials == 23 + 22 + 23);
}

TEST_CASE("steady state: two steps by default, steps1 for the first alone", "[model][steady]") {
  CHECK(load_workload("resnet50_b2_nows").info.step_starts.size() == 2);
  CHECK(load_workload("resnet50_b2_nows_steps1").info.step_starts == std::vector<std::size_t>{0});
  CHECK(load_workload("resnet50_b2_nows_steps3").info.step_starts.size() == 3);
  CHECK(load_workload("random:n=10").info.step_starts.empty());
}

TEST_CASE("steady state: AdamW's moments, made at step 1's end, raise step 2's peak", "[model][steady]") {
  // bert_base at batch 32: the peak is in backward, where activations dominate. Step 2 holds
  // the same tensors there plus AdamW's moments, 2 x 4 B per parameter (109,482,240 + a
  // 768 x 2 + 2 classifier), made at the end of step 1: higher by exactly those.
  Scenario scenario;
  scenario.device.capacity = 64_GiB;
  const auto run_one = [&](const std::string& spec) {
    scenario.tenants = {TenantSpec{std::make_shared<const Trace>(load_workload(spec)), policy_maker("direct"), 0}};
    return run(scenario).tenants.front();
  };
  const TenantResult first = run_one("bert_base_b32_adamw_steps1");
  const TenantResult steady = run_one("bert_base_b32_adamw");
  CHECK(first.peak_step == 1);
  CHECK(steady.peak_step == 2);
  CHECK(steady.steps == 2);
  const Bytes moments = 2 * 4 * (109'482'240 + 768 * 2 + 2);
  CHECK(steady.at_peak.by_tag[static_cast<std::size_t>(Tag::optimizer)] == moments);
  CHECK(first.at_peak.by_tag[static_cast<std::size_t>(Tag::optimizer)] == 0);
  CHECK(steady.peak_requested == first.peak_requested + moments);
}

}  // namespace
}  // namespace allocsim
