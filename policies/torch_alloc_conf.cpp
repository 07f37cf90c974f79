#include "policies/torch_alloc_conf.hpp"

#include <algorithm>
#include <array>

#include "policies/caching.hpp"
#include "policies/registry.hpp"
#include "sim/error.hpp"
#include "sim/spec.hpp"

namespace allocsim {
namespace {

// Every key of the CUDA allocator's config, PyTorch 1.10 to 2.9.
constexpr std::array<std::string_view, 13> kKeys{
    "max_split_size_mb", "max_non_split_rounding_mb", "garbage_collection_threshold", "roundup_power2_divisions",
    "expandable_segments", "backend", "per_process_memory_fraction", "release_lock_on_cudamalloc",
    "pinned_use_cuda_host_register", "pinned_num_register_threads", "pinned_use_background_threads",
    "pinned_reserve_segment_size_mb", "graph_capture_record_stream_reuse"};

// The keys that only PyTorch's native allocator reads: cudaMallocAsync ignores them.
bool native_only(std::string_view key) {
  return key == "max_split_size_mb" || key == "max_non_split_rounding_mb" || key == "garbage_collection_threshold" ||
         key == "roundup_power2_divisions" || key == "expandable_segments";
}

std::string valid_keys() {
  std::string list;
  for (const std::string_view key : kKeys) list += (list.empty() ? "" : ", ") + std::string(key);
  return list;
}

// PyTorch spells booleans True and False and refuses any other spelling.
bool true_or_false(const std::string& key, const std::string& value) {
  if (value == "True") return true;
  if (value == "False") return false;
  throw Error("--alloc-conf " + key + ":" + value + ": PyTorch takes True or False");
}

}  // namespace

std::vector<std::pair<std::string, std::string>> alloc_conf_entries(std::string_view conf) {
  std::vector<std::pair<std::string, std::string>> entries;
  std::string entry;
  int depth = 0;
  const auto flush = [&] {
    if (entry.empty()) return;
    const auto colon = entry.find(':');
    entries.emplace_back(entry.substr(0, colon), colon == std::string::npos ? "" : entry.substr(colon + 1));
    entry.clear();
  };
  for (const char c : conf) {
    if (c == ' ' || c == '\t') continue;
    if (c == '[') ++depth;
    if (c == ']') --depth;
    if (c == ',' && depth <= 0) {
      flush();
    } else {
      entry += c;
    }
  }
  flush();
  return entries;
}

bool alloc_conf_key_without_effect(std::string_view key, std::string_view value) {
  return key == "release_lock_on_cudamalloc" || key.starts_with("pinned_") || key == "graph_capture_record_stream_reuse" ||
         (key == "backend" && value == "native");
}

bool is_alloc_conf_key(std::string_view key) { return std::find(kKeys.begin(), kKeys.end(), key) != kKeys.end(); }

AllocConfPolicy alloc_conf_policy(std::string_view conf) {
  AllocConfPolicy made;
  Spec spec{"caching", {}};
  bool async = false;
  bool gc = false;
  bool fraction = false;
  std::vector<std::string> ignored_by_async;
  for (const auto& [key, value] : alloc_conf_entries(conf)) {
    if (!is_alloc_conf_key(key)) {
      throw Error("--alloc-conf: '" + key + "' is not a key of PYTORCH_CUDA_ALLOC_CONF; PyTorch reads " + valid_keys());
    }
    if (value.empty()) throw Error("--alloc-conf: '" + key + "' has no value; PyTorch takes key:value (" + key + ":...)");
    if (native_only(key)) ignored_by_async.push_back(key + ":" + value);
    if (key == "max_split_size_mb" || key == "max_non_split_rounding_mb") {
      const bool whole = value.find_first_not_of("0123456789") == std::string::npos;
      if (!whole || value.size() > 9 || std::stoull(value) < 20) {
        throw Error("--alloc-conf " + key + ":" + value + ": PyTorch takes a whole number of MB, 20 or more");
      }
      spec.args.emplace_back(key == "max_split_size_mb" ? "max_split_size" : "max_non_split_rounding", value + "MiB");
    } else if (key == "garbage_collection_threshold") {
      const Spec probe{"caching", {{"gc_threshold", value}}};
      const double threshold = Params(probe, CachingPolicy::kParams, "--alloc-conf").number("gc_threshold");
      if (!(threshold > 0 && threshold < 1)) {
        throw Error("--alloc-conf garbage_collection_threshold:" + value + ": PyTorch takes a number between 0 and 1, "
                    "both excluded");
      }
      spec.args.emplace_back("gc_threshold", value);
      gc = true;
    } else if (key == "roundup_power2_divisions") {
      spec.args.emplace_back("roundup_power2_divisions", value);
    } else if (key == "expandable_segments") {
      if (true_or_false(key, value)) spec.name = "expandable";
    } else if (key == "per_process_memory_fraction") {
      spec.args.emplace_back("fraction", value);
      fraction = true;
    } else if (key == "backend") {
      if (value != "native" && value != "cudaMallocAsync") {
        throw Error("--alloc-conf backend:" + value + ": PyTorch takes backend:native or backend:cudaMallocAsync");
      }
      async = value == "cudaMallocAsync";
    } else if (key == "release_lock_on_cudamalloc" || key == "pinned_use_cuda_host_register" ||
               key == "pinned_use_background_threads") {
      true_or_false(key, value);
    }
  }
  if (async) {
    // cudaMallocAsync reads only the fraction; PyTorch warns that it ignores the rest.
    Spec pool{"torch-async", {}};
    for (const auto& arg : spec.args) {
      if (arg.first == "fraction") pool.args.push_back(arg);
    }
    spec = std::move(pool);
    for (const std::string& entry : ignored_by_async) {
      made.warnings.push_back("--alloc-conf " + entry + " has no effect under backend:cudaMallocAsync, which ignores "
                              "the native allocator's settings (PyTorch warns the same)");
    }
  } else if (gc && !fraction) {
    made.warnings.push_back("--alloc-conf garbage_collection_threshold has no effect without a memory fraction: "
                            "PyTorch collects cached blocks only under set_per_process_memory_fraction (add "
                            "per_process_memory_fraction:F)");
  }
  made.spec = to_string(spec);
  parse_policy_spec(made.spec);
  return made;
}

}  // namespace allocsim
