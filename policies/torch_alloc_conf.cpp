#include "policies/torch_alloc_conf.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "policies/caching.hpp"
#include "policies/registry.hpp"
#include "sim/error.hpp"
#include "sim/spec.hpp"

namespace allocsim {
namespace {

// What a key of PyTorch's CUDA allocator config sets here (AllocConfSetting::Kind).
using Sets = AllocConfSetting::Kind;

// The values PyTorch's config parser accepts for a key.
enum class Takes : std::uint8_t {
  anything,         // read by the parameter it sets, or not at all
  megabytes,        // a whole number of MB, 20 or more
  open_unit,        // a number between 0 and 1, both excluded
  true_or_false,    // PyTorch spells booleans True and False
  backend,          // native or cudaMallocAsync
};

struct ConfKey {
  std::string_view key;
  Sets sets;
  Takes takes;
  bool native_only;  // read by the native allocator only: cudaMallocAsync ignores it
};

// Every key of the CUDA allocator's config, PyTorch 1.10 to 2.9.
constexpr std::array kKeys{
    ConfKey{"max_split_size_mb", Sets::parameter, Takes::megabytes, true},
    ConfKey{"max_non_split_rounding_mb", Sets::parameter, Takes::megabytes, true},
    ConfKey{"garbage_collection_threshold", Sets::parameter, Takes::open_unit, true},
    ConfKey{"roundup_power2_divisions", Sets::parameter, Takes::anything, true},
    ConfKey{"expandable_segments", Sets::policy, Takes::true_or_false, true},
    ConfKey{"backend", Sets::policy, Takes::backend, false},
    ConfKey{"per_process_memory_fraction", Sets::parameter, Takes::anything, false},
    ConfKey{"release_lock_on_cudamalloc", Sets::nothing, Takes::true_or_false, false},
    ConfKey{"pinned_use_cuda_host_register", Sets::nothing, Takes::true_or_false, false},
    ConfKey{"pinned_num_register_threads", Sets::nothing, Takes::anything, false},
    ConfKey{"pinned_use_background_threads", Sets::nothing, Takes::true_or_false, false},
    ConfKey{"pinned_reserve_segment_size_mb", Sets::nothing, Takes::anything, false},
    ConfKey{"graph_capture_record_stream_reuse", Sets::nothing, Takes::anything, false},
};

const ConfKey* find_key(std::string_view key) {
  const auto found = std::find_if(kKeys.begin(), kKeys.end(), [&](const ConfKey& row) { return row.key == key; });
  return found == kKeys.end() ? nullptr : &*found;
}

// The parameter of `caching` a key names: the one whose key, or native spelling, it is.
const ParamInfo* find_parameter(std::string_view key) {
  for (const ParamInfo& param : CachingPolicy::kParams) {
    if (param.key == key || param.native == key) return &param;
  }
  return nullptr;
}

// The parameter a PYTORCH_CUDA_ALLOC_CONF key of the table sets.
const ParamInfo& parameter_of(std::string_view key) {
  if (const ParamInfo* param = find_parameter(key)) return *param;
  throw Error("'" + std::string(key) + "' is no parameter of caching");
}

std::string valid_keys() {
  std::string list;
  for (const ConfKey& row : kKeys) list += (list.empty() ? "" : ", ") + std::string(row.key);
  return list;
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

bool is_alloc_conf_key(std::string_view key) { return find_key(key) != nullptr; }

std::string_view alloc_conf_key(std::string_view parameter) {
  for (const ConfKey& row : kKeys) {
    if (row.sets == Sets::parameter && parameter_of(row.key).key == parameter) return row.key;
  }
  return {};
}

namespace {

// Throws Error "ORIGIN KEY:VALUE: PyTorch takes ..." unless PyTorch's parser accepts `value`.
void check_value(const ConfKey& row, const std::string& value, std::string_view origin) {
  const auto refuse = [&](std::string_view takes) {
    throw Error(std::string(origin).append(" ").append(row.key).append(":").append(value).append(": PyTorch takes ").append(takes));
  };
  switch (row.takes) {
    case Takes::anything:
      return;
    case Takes::megabytes:
      if (value.find_first_not_of("0123456789") != std::string::npos || value.size() > 9 || std::stoull(value) < 20) {
        refuse("a whole number of MB, 20 or more");
      }
      return;
    case Takes::open_unit: {
      const Spec probe{"caching", {{"gc_threshold", value}}};
      const double number = Params(probe, CachingPolicy::kParams, std::string(origin)).number("gc_threshold");
      if (!(number > 0 && number < 1)) refuse("a number between 0 and 1, both excluded");
      return;
    }
    case Takes::true_or_false:
      if (value != "True" && value != "False") refuse("True or False");
      return;
    case Takes::backend:
      if (value != "native" && value != "cudaMallocAsync") refuse("backend:native or backend:cudaMallocAsync");
      return;
  }
}

}  // namespace

AllocConfSetting read_alloc_conf_entry(const std::string& key, const std::string& value, std::string_view origin) {
  const ConfKey* row = find_key(key);
  if (row == nullptr) {
    throw Error(std::string(origin).append(": '").append(key).append("' is not a key of PYTORCH_CUDA_ALLOC_CONF; PyTorch reads ").append(valid_keys()));
  }
  if (value.empty()) {
    throw Error(std::string(origin).append(": '").append(key).append("' has no value; PyTorch takes key:value (").append(key).append(":...)"));
  }
  check_value(*row, value, origin);
  switch (row->sets) {
    case Sets::parameter: {
      const ParamInfo& param = parameter_of(key);
      return {Sets::parameter, std::string(param.key), value + std::string(param.native_unit), row->native_only};
    }
    case Sets::policy:
      if (value == "True") return {Sets::policy, "expandable", "", row->native_only};
      if (value == "cudaMallocAsync") return {Sets::policy, "torch-async", "", row->native_only};
      if (value == "False") return {Sets::policy, "caching", "", row->native_only};
      break;  // backend:native: PyTorch's own allocator, as without it
    case Sets::nothing:
      break;
  }
  return {Sets::nothing, "", "", row->native_only};
}

AllocConfPolicy alloc_conf_policy(std::string_view conf) {
  AllocConfPolicy made;
  Spec spec{"caching", {}};
  bool async = false;
  bool gc = false;
  bool fraction = false;
  std::vector<std::string> ignored_by_async;
  for (const auto& [key, value] : alloc_conf_entries(conf)) {
    const AllocConfSetting setting = read_alloc_conf_entry(key, value, "--alloc-conf");
    if (setting.native_only) ignored_by_async.push_back(key + ":" + value);
    if (setting.kind == AllocConfSetting::Kind::parameter) {
      spec.args.emplace_back(setting.name, setting.value);
      gc = gc || setting.name == "gc_threshold";
      fraction = fraction || setting.name == "fraction";
    } else if (setting.kind == AllocConfSetting::Kind::policy) {
      if (setting.name == "expandable") spec.name = "expandable";
      async = async || setting.name == "torch-async";
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
  made.policy = policy_spec(std::move(spec));
  return made;
}

namespace {

// A conf's entries with `key` set to `value`: in its place where the conf has it, else last.
void set_entry(std::vector<std::pair<std::string, std::string>>& entries, std::string_view key, std::string value) {
  const auto found = std::find_if(entries.begin(), entries.end(), [&](const auto& entry) { return entry.first == key; });
  if (found != entries.end()) {
    found->second = std::move(value);
  } else {
    entries.emplace_back(std::string(key), std::move(value));
  }
}

// A parameter's value as its PyTorch key spells it: bytes in the key's unit (max_split_size
// 128MiB is max_split_size_mb 128); none when it is not a whole number of that unit.
std::optional<std::string> native_value(const ParamInfo& param, const std::string& value) {
  if (param.native_unit.empty()) return value;
  const Bytes unit = parse_bytes(std::string("1").append(param.native_unit));
  const Bytes bytes = parse_bytes(value);
  if (bytes % unit != 0) return std::nullopt;
  return std::to_string(bytes / unit);
}

}  // namespace

std::optional<std::string> alloc_conf_line(const Spec& spec, std::string_view recorded) {
  const std::string_view policy = find_policy(spec.name).name;
  if (policy != "caching" && policy != "expandable" && policy != "torch-async") return std::nullopt;
  std::vector<std::pair<std::string, std::string>> entries = alloc_conf_entries(recorded);
  if (policy == "expandable") set_entry(entries, "expandable_segments", "True");
  if (policy == "torch-async") set_entry(entries, "backend", "cudaMallocAsync");
  for (const auto& [parameter, value] : spec.args) {
    const ParamInfo* param = find_parameter(parameter);  // spelt our way or PyTorch's
    const std::string_view key = param ? alloc_conf_key(param->key) : std::string_view();
    if (key.empty() || key == "per_process_memory_fraction") return std::nullopt;
    const std::optional<std::string> native = parameter == param->native ? value : native_value(*param, value);
    if (!native) return std::nullopt;
    set_entry(entries, key, *native);
  }
  std::string line = "PYTORCH_CUDA_ALLOC_CONF=";
  for (std::size_t i = 0; i < entries.size(); ++i) {
    line.append(i == 0 ? "" : ",").append(entries[i].first);
    if (!entries[i].second.empty()) line.append(":").append(entries[i].second);
  }
  return line;
}

std::string torch_setting(const Spec& spec, std::string_view recorded) {
  const std::string_view policy = find_policy(spec.name).name;
  if (policy == "caching" && spec.args.empty()) {
    return recorded.empty() ? "# the recorded settings: keep PYTORCH_CUDA_ALLOC_CONF as it was"
                            : "# the recorded settings: keep it as it was\nPYTORCH_CUDA_ALLOC_CONF=" + std::string(recorded);
  }
  // A memory fraction is set from Python: the PyTorch versions recordings come from read no
  // per_process_memory_fraction key.
  Spec conf{spec.name, {}};
  std::optional<std::string> fraction;
  for (const auto& arg : spec.args) {
    if (arg.first == "fraction") {
      fraction = arg.second;
    } else {
      conf.args.push_back(arg);
    }
  }
  const std::optional<std::string> line = alloc_conf_line(conf, recorded);
  if (!line) return std::string("# ").append(to_string(spec));
  if (!fraction) return *line;
  return *line + "\n# and in Python, before the first allocation:\ntorch.cuda.set_per_process_memory_fraction(" + *fraction + ")";
}

}  // namespace allocsim
