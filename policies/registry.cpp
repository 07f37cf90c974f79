#include "policies/registry.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <string>
#include <utility>

#include "policies/async_pool.hpp"
#include "policies/bfc.hpp"
#include "policies/buddy.hpp"
#include "policies/caching.hpp"
#include "policies/caching_adoption.hpp"
#include "policies/common/upstream.hpp"
#include "policies/compact.hpp"
#include "policies/direct.hpp"
#include "policies/limiting.hpp"
#include "policies/optimal.hpp"
#include "policies/placement.hpp"
#include "policies/rmm_arena.hpp"
#include "policies/rmm_binning.hpp"
#include "policies/rmm_pool.hpp"
#include "policies/torch_alloc_conf.hpp"
#include "policies/vmm.hpp"
#include "sim/direct_loop.hpp"
#include "sim/error.hpp"

namespace allocsim {
namespace {

// The one place a policy type meets the replay loop: each row's factory hands the engine
// the loop compiled for the type it made.
template <typename P, typename... Args>
MadePolicy made(Args&&... args) {
  return MadePolicy(std::make_unique<P>(std::forward<Args>(args)...), &direct_loop<P>);
}

// What a policy's settings make of its segments: its own segment_traits, where it has one.
template <typename P, typename Settings>
SegmentTraits segment_traits(const Settings& settings) {
  if constexpr (requires { P::segment_traits(settings); }) {
    return P::segment_traits(settings);
  } else {
    return {};
  }
}

// A row's read: the policy's settings read once, where the spec is read; the policy made
// from them on each device it is asked for.
template <typename P>
ReadPolicy read(const Params& params) {
  auto settings = P::settings(params);
  const SegmentTraits segments = segment_traits<P>(settings);
  return {[settings = std::move(settings)](Device& device) { return made<P>(settings, device); }, segments};
}

// An RMM resource over the upstream its spec names (`upstream=`), or over the device.
template <typename P>
ReadPolicy read_over_upstream(const Params& params) {
  MakePolicy upstream = read_upstream(params.text("upstream"));
  if (!upstream) return read<P>(params);
  return {[upstream = std::move(upstream), settings = P::settings(params)](Device& device) {
            return made<LayeredPolicy>(std::move(upstream(device).policy), device,
                                       [&](Device& over) { return std::make_unique<P>(settings, over); });
          },
          {}};
}

// Best and worst fit search by size only, so they take the pool without an address index.
template <Fit fit>
ReadPolicy read_placement(const Params& params) {
  return {[settings = placement_settings(params)](Device& device) {
            if constexpr (searches_by_address(fit)) {
              return made<AddressFitPolicy>(fit, settings, device);
            } else {
              return made<SizeFitPolicy>(fit, settings, device);
            }
          },
          {}};
}

const std::array kPolicies{
    PolicyInfo{"bfc", "prealloc", Framework::tf,
               "TensorFlow's GPU default: BFC (tsl/framework/bfc_allocator.cc) preallocating "
               "free memory minus MinSystemMemory",
               "binned best fit with coalescing in one region of the whole limit, taken at the first request",
               BfcPolicy::kTensorFlowParams, read<BfcPolicy>},
    PolicyInfo{"growth", "", Framework::tf, "TensorFlow with allow_growth / set_memory_growth(True)",
               "BFC growing on demand: regions of 2 MiB doubling, garbage collection of free regions",
               BfcPolicy::kGrowthParams, read<BfcPolicy>},
    PolicyInfo{"jax", "", Framework::jax, "JAX/XLA's GPU default (XLA_PYTHON_CLIENT_PREALLOCATE unset)",
               "BFC preallocating 75% of total memory, no garbage collection", BfcPolicy::kJaxParams,
               read<BfcPolicy>},
    PolicyInfo{"jax-growth", "", Framework::jax, "JAX with XLA_PYTHON_CLIENT_PREALLOCATE=false",
               "BFC up to 75% of total memory, growing from 2 MiB, no garbage collection", BfcPolicy::kJaxGrowthParams,
               read<BfcPolicy>},
    PolicyInfo{"caching", "torch", Framework::torch,
               "PyTorch's CUDA caching allocator (c10/cuda/CUDACachingAllocator.cpp), native backend",
               "per-stream best fit in small (2 MiB) and large segments, cached until empty_cache or an OOM",
               CachingPolicy::kParams, read<CachingPolicy>, caching_adoption},
    PolicyInfo{"expandable", "", Framework::torch,
               "PyTorch's caching allocator with PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True",
               "the same, in one address range per stream and pool mapped in 2 MiB / 20 MiB pages on demand; "
               "empty_cache unmaps whole free pages",
               CachingPolicy::kExpandableParams, read<CachingPolicy>, caching_adoption},
    PolicyInfo{"direct", "platform", Framework::cuda,
               "cudaMalloc/cudaFree per request: TensorFlow's cuda_malloc, JAX's platform, "
               "PyTorch with PYTORCH_NO_CUDA_MEMORY_CACHING=1",
               "every request is its own device allocation, rounded to the device granularity",
               DirectPolicy::kParams, read<DirectPolicy>},
    PolicyInfo{"bestfit", "", Framework::none, "textbook best fit with coalescing (BFC's placement without bins)",
               "one region of all free device memory: the smallest free range that fits, lowest address first",
               kPlacementParams, read_placement<Fit::best>},
    PolicyInfo{"firstfit", "", Framework::none, "textbook address-ordered first fit with coalescing",
               "one region of all free device memory: the lowest-addressed free range that fits",
               kPlacementParams, read_placement<Fit::first>},
    PolicyInfo{"nextfit", "", Framework::none, "textbook next fit with coalescing",
               "one region: the first free range that fits at or after where the last block ended, wrapping",
               kPlacementParams, read_placement<Fit::next>},
    PolicyInfo{"buddy", "", Framework::none, "the binary buddy system (Knowlton 1965)",
               "one power-of-two region: blocks halved to the request's power of two, buddies merged on free",
               BuddyPolicy::kParams, read<BuddyPolicy>},
    PolicyInfo{"worstfit", "", Framework::none, "textbook worst fit with coalescing",
               "one region: the largest free range, lowest address among equals", kPlacementParams,
               read_placement<Fit::worst>},
    PolicyInfo{"compact", "defrag", Framework::none,
               "no shipping GPU allocator: a moving allocator, as runtimes with handles could be",
               "best fit over segments; when fragmentation fails a request, live blocks move (device copies) to open room",
               CompactPolicy::kParams, read<CompactPolicy>},
    PolicyInfo{"optimal", "", Framework::none,
               "no real allocator: the offline yardstick of static planners (TFLite, XLA)",
               "sees the whole trace ahead; fixed offsets in one arena from the best of several greedy heuristics",
               OptimalPolicy::kParams, read<OptimalPolicy>},
    PolicyInfo{"vmm", "", Framework::none, "GMLake (ASPLOS'24): CUDA VMM page stitching",
               "a pool of 2 MiB pages; large requests map any free pages into one new virtual range, small ones share pages",
               VmmPolicy::kParams, read<VmmPolicy>},
    PolicyInfo{"async", "cudamallocasync", Framework::cuda,
               "CUDA's stream-ordered allocator: cudaMallocAsync on the device's pool",
               "chunks of 2 MiB multiples, best fit; frees reused by stream order and the three reuse rules; "
               "trimmed to release_threshold (0) at every host synchronisation",
               AsyncPoolPolicy::kParams, read<AsyncPoolPolicy>},
    PolicyInfo{"torch-async", "", Framework::cuda, "PyTorch with PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync "
               "(c10/cuda/CUDAMallocAsyncAllocator.cpp)",
               "the async pool never trimmed (threshold max), all reuse rules on; empty_cache syncs and trims to 0",
               AsyncPoolPolicy::kTorchParams, read<AsyncPoolPolicy>},
    PolicyInfo{"tf-async", "", Framework::cuda,
               "TensorFlow with TF_GPU_ALLOCATOR=cuda_malloc_async (GpuCudaMallocAsyncAllocator)",
               "the async pool on one stream, kept up to TensorFlow's memory limit; an OOM syncs and retries once",
               AsyncPoolPolicy::kTensorFlowParams, read<AsyncPoolPolicy>},
    PolicyInfo{"rmm-pool", "", Framework::rmm,
               "RAPIDS RMM's pool_memory_resource (rmm/mr/device/pool_memory_resource.hpp)",
               "coalescing best fit in per-stream free lists, growing by at least doubling; never gives memory back",
               RmmPoolPolicy::kParams, read_over_upstream<RmmPoolPolicy>},
    PolicyInfo{"rmm-arena", "", Framework::rmm, "RAPIDS RMM's arena_memory_resource (rmm/mr/device/detail/arena.hpp)",
               "one arena in superblocks; address-ordered first fit; up to 1 MiB from per-stream superblocks",
               RmmArenaPolicy::kParams, read_over_upstream<RmmArenaPolicy>},
    PolicyInfo{"rmm-binning", "", Framework::rmm,
               "RAPIDS RMM's binning_memory_resource over fixed_size_memory_resource bins",
               "power-of-two bins (none unless min_exp, max_exp) of fixed-size blocks in chunks of 128; the rest "
               "to the upstream",
               RmmBinningPolicy::kParams, read_over_upstream<RmmBinningPolicy>},
    PolicyInfo{"limiting", "rmm-limiting", Framework::rmm, "RAPIDS RMM's limiting_resource_adaptor",
               "fails a request once the live bytes (aligned to 256) would pass the limit; else the upstream serves it",
               LimitingPolicy::kParams, read<LimitingPolicy>},
};

}  // namespace

std::span<const PolicyInfo> all_policies() { return kPolicies; }

namespace {

// Names users reach for from their framework's words, and the row that models each.
constexpr std::array<std::pair<std::string_view, std::string_view>, 8> kNearMisses{{
    {"pytorch", "caching (or its alias torch)"},
    {"native", "caching (PyTorch's native backend)"},
    {"tensorflow", "bfc, or growth for allow_growth"},
    {"tf", "bfc, or growth for allow_growth"},
    {"xla", "jax"},
    {"cudamallocasync", "async, or torch-async for PyTorch's backend:cudaMallocAsync"},
    {"cuda_malloc_async", "tf-async (TF_GPU_ALLOCATOR=cuda_malloc_async)"},
    {"cudamalloc", "direct"},
}};

std::string lowered(std::string_view text) {
  std::string lower(text);
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return lower;
}

// PYTORCH_CUDA_ALLOC_CONF's words given as a policy spec (`expandable_segments:True`, or
// `caching:max_split_size_mb:128`): an error that shows both right spellings.
void refuse_alloc_conf_spelling(std::string_view text) {
  const std::size_t colon = text.find(':');
  if (colon == std::string_view::npos) return;
  std::string_view entry = text;
  if (!is_alloc_conf_key(text.substr(0, colon))) {
    entry = text.substr(colon + 1);
    const std::size_t inner = entry.find(':');
    if (inner == std::string_view::npos || entry.find('=') < inner || !is_alloc_conf_key(entry.substr(0, inner))) return;
  }
  const std::size_t inner = entry.find(':');
  const std::string key(entry.substr(0, inner));
  const std::string value(entry.substr(inner + 1, entry.find(',') == std::string_view::npos ? std::string_view::npos
                                                                                           : entry.find(',') - inner - 1));
  throw Error("--policy '" + std::string(text) + "' is written as PYTORCH_CUDA_ALLOC_CONF writes it: give --alloc-conf " +
              key + ":" + value + " (PyTorch's allocator so configured)" +
              (key == "expandable_segments" ? std::string(", or --policy expandable")
                                            : ", or --policy caching:" + key + "=" + value));
}

}  // namespace

const PolicyInfo& find_policy(std::string_view name) {
  for (const PolicyInfo& info : kPolicies) {
    if (info.name == name || (!info.alias.empty() && info.alias == name)) return info;
  }
  std::string valid;
  for (const PolicyInfo& info : kPolicies) valid += (valid.empty() ? "" : ", ") + std::string(info.name);
  for (const auto& [miss, row] : kNearMisses) {
    if (lowered(name) == miss) throw Error("unknown policy '" + std::string(name) + "': did you mean " + std::string(row) + "?");
  }
  throw Error("unknown policy '" + std::string(name) + "'; valid policies: " + valid);
}

namespace {

PolicySpec read_policy_spec(Spec spec, std::string text) {
  const PolicyInfo& info = find_policy(spec.name);
  ReadPolicy read = info.read(Params(spec, info.params, "policy " + std::string(info.name)));
  return PolicySpec{&info, std::move(text), std::move(spec), std::move(read.make), read.segments};
}

}  // namespace

PolicySpec parse_policy_spec(std::string_view text) {
  refuse_alloc_conf_spelling(text);
  return read_policy_spec(parse_spec(text), std::string(text));
}

PolicySpec policy_spec(Spec spec) {
  std::string text = to_string(spec);
  return read_policy_spec(std::move(spec), std::move(text));
}

namespace {

// The items of --policy lists, in order, `all` spelled out as every row's name.
std::vector<std::string> policy_items(std::span<const std::string> lists) {
  std::vector<std::string> items;
  for (const std::string& list : lists) {
    for (std::string& item : split_spec_list(list, "--policy")) {
      if (item != "all") {
        items.push_back(std::move(item));
        continue;
      }
      for (const PolicyInfo& info : kPolicies) items.emplace_back(info.name);
    }
  }
  return items;
}

}  // namespace

std::vector<PolicySpec> parse_policy_lists(std::span<const std::string> lists) {
  std::vector<PolicySpec> policies;
  for (const std::string& item : policy_items(lists)) policies.push_back(parse_policy_spec(item));
  return policies;
}

std::unique_ptr<Policy> make_policy(std::string_view spec, Device& device) {
  return std::move(parse_policy_spec(spec).make(device).policy);
}

PolicyMaker policy_maker(std::string_view spec) { return parse_policy_spec(spec).maker(); }

std::vector<PolicyMaker> policy_makers(std::span<const std::string> lists, std::span<const PolicyMaker> given) {
  std::vector<PolicyMaker> makers;
  for (const std::string& item : policy_items(lists)) {
    const auto found = std::find_if(given.begin(), given.end(), [&](const PolicyMaker& maker) { return maker.text == item; });
    makers.push_back(found != given.end() ? *found : policy_maker(item));
  }
  return makers;
}

}  // namespace allocsim
