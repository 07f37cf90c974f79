#include "studies/sweep_grid.hpp"

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <functional>
#include <span>

#include "policies/registry.hpp"
#include "sim/error.hpp"
#include "sim/spec.hpp"
#include "workloads/catalogue.hpp"
#include "workloads/model/model_spec.hpp"

namespace allocsim {
namespace {

// Ranges above this many values are a typo, not a sweep.
constexpr std::size_t kMaxAxisValues = 100'000;

std::string_view trim(std::string_view text) {
  while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
  while (!text.empty() && text.back() == ' ') text.remove_suffix(1);
  return text;
}

std::vector<std::string_view> split(std::string_view text, char separator) {
  std::vector<std::string_view> parts;
  while (true) {
    const auto at = text.find(separator);
    parts.push_back(trim(text.substr(0, at)));
    if (at == std::string_view::npos) return parts;
    text.remove_prefix(at + 1);
  }
}

std::int64_t parse_int(std::string_view text, std::string_view what) {
  std::int64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc{} || end != text.data() + text.size()) {
    throw Error(std::string(what) + ": '" + std::string(text) + "' is not a whole number");
  }
  return value;
}

// One item of a numeric list: a value, a doubling range a:b or a stepped range a:b:s.
template <typename T>
void expand_item(std::string_view item, std::string_view what, const std::function<T(std::string_view)>& parse,
                 std::vector<T>& out) {
  const std::vector<std::string_view> parts = split(item, ':');
  if (parts.size() == 1) {
    out.push_back(parse(parts[0]));
    return;
  }
  if (parts.size() > 3) throw Error(std::string(what) + ": '" + std::string(item) + "' is not a:b or a:b:step");
  const T first = parse(parts[0]);
  const T last = parse(parts[1]);
  if (first > last) throw Error(std::string(what) + ": '" + std::string(item) + "' runs backwards");
  const auto too_many = [&] {
    return Error(std::string(what) + ": '" + std::string(item) + "' has more than " + std::to_string(kMaxAxisValues) +
                 " values");
  };
  if (parts.size() == 2) {
    if (first <= 0) throw Error(std::string(what) + ": doubling range '" + std::string(item) + "' must start above 0");
    for (T value = first; value <= last; value *= 2) {
      out.push_back(value);
      if (value > last / 2) break;  // the next doubling would pass last (or overflow)
    }
    return;
  }
  const T step = parse(parts[2]);
  if (step <= 0) throw Error(std::string(what) + ": step in '" + std::string(item) + "' must be above 0");
  if (static_cast<std::uint64_t>(last - first) / static_cast<std::uint64_t>(step) >= kMaxAxisValues) throw too_many();
  for (T value = first; value <= last; value += step) {
    out.push_back(value);
    if (last - value < step) break;
  }
}

template <typename T>
std::vector<T> parse_list(std::string_view text, std::string_view what, const std::function<T(std::string_view)>& parse) {
  std::vector<T> values;
  for (std::string_view item : split(text, ',')) {
    if (item.empty()) throw Error(std::string(what) + ": empty item in '" + std::string(text) + "'");
    expand_item<T>(item, what, parse, values);
    if (values.size() > kMaxAxisValues) throw Error(std::string(what) + ": more than " + std::to_string(kMaxAxisValues) + " values");
  }
  std::sort(values.begin(), values.end());
  values.erase(std::unique(values.begin(), values.end()), values.end());
  return values;
}

std::vector<std::string> words(std::string_view text, std::string_view what, std::span<const std::string_view> valid) {
  std::vector<std::string> values;
  for (std::string_view item : split(text, ',')) {
    if (std::find(valid.begin(), valid.end(), item) == valid.end()) {
      std::string list;
      for (std::string_view word : valid) list += (list.empty() ? "" : ", ") + std::string(word);
      throw Error(std::string(what) + ": '" + std::string(item) + "' is not one of " + list);
    }
    if (std::find(values.begin(), values.end(), item) == values.end()) values.emplace_back(item);
  }
  return values;
}

std::vector<std::string> words(std::string_view text, std::string_view what,
                               std::initializer_list<std::string_view> valid) {
  return words(text, what, std::span<const std::string_view>(valid.begin(), valid.size()));
}

// The rows of model_tokens() on one axis, in table order.
std::vector<const ModelToken*> axis_tokens(std::string_view axis) {
  std::vector<const ModelToken*> tokens;
  for (const ModelToken& token : model_tokens()) {
    if (token.axis == axis) tokens.push_back(&token);
  }
  return tokens;
}

// One value of a model axis: the token and, for a numbered one, its number.
struct AxisValue {
  const ModelToken* token = nullptr;  // null: the axis is not swept
  std::int64_t value = 0;
};

struct Axis {
  ModelKey key;
  std::vector<AxisValue> values;
};

// The axes in ModelKey order (batch last); an axis not given has one value that sets nothing.
std::vector<Axis> model_axis_values(const SweepOptions& options) {
  for (const auto& [name, list] : options.model_axes) {
    if (axis_tokens(name).empty()) throw Error("unknown model axis '" + name + "'");
  }
  std::vector<Axis> axes;
  for (std::size_t k = 0; k < kModelKeys; ++k) {
    for (const ModelAxis& described : model_axes()) {
      const std::vector<const ModelToken*> tokens = axis_tokens(described.name);
      if (static_cast<std::size_t>(tokens.front()->key) != k) continue;
      Axis axis{tokens.front()->key, {}};
      const auto given = options.model_axes.find(described.name);
      const std::string what = "--" + described.name;
      if (given == options.model_axes.end() || given->second.empty()) {
        axis.values.push_back({});
      } else if (tokens.front()->numbered) {
        for (std::int64_t value : parse_int_list(given->second, what)) axis.values.push_back({tokens.front(), value});
      } else {
        std::vector<std::string_view> valid;
        for (const ModelToken* token : tokens) valid.push_back(token->word);
        for (const std::string& word : words(given->second, what, valid)) {
          axis.values.push_back({*std::find_if(tokens.begin(), tokens.end(), [&](const ModelToken* t) { return t->word == word; }), 0});
        }
      }
      axes.push_back(std::move(axis));
    }
  }
  return axes;
}

std::string_view precision_name(Precision precision) {
  switch (precision) {
    case Precision::fp32: return "fp32";
    case Precision::amp: return "amp";
    case Precision::bf16: return "bf16";
  }
  return "";
}

std::string_view optimizer_name(Optimizer optimizer) {
  switch (optimizer) {
    case Optimizer::sgd: return "sgd";
    case Optimizer::momentum: return "momentum";
    case Optimizer::adam: return "adam";
    case Optimizer::adamw: return "adamw";
    case Optimizer::adamw8bit: return "adamw8bit";
    case Optimizer::adamw32bit: return "adamw32bit";
    case Optimizer::paged_adamw8bit: return "pagedadamw8bit";
    case Optimizer::paged_adamw32bit: return "pagedadamw32bit";
  }
  return "";
}

// A sweep runs long: a trace file must be there before the first point, not when a point loads it.
void refuse_missing_file(const WorkloadSpec& spec) {
  const FileChoice* file = spec.file();
  if (file && !std::filesystem::is_regular_file(file->path)) throw Error("workload " + spec.text + ": no such file");
}

WorkloadSpec checked_workload(const std::string& text, std::span<const WorkloadSpec> given) {
  WorkloadSpec spec = parse_workload_spec(text, given);
  refuse_missing_file(spec);
  return spec;
}

std::vector<std::string> model_leading(const std::optional<ModelSpec>& model) {
  if (!model) return std::vector<std::string>(8);
  const LoweringOptions& o = model->options;
  return {std::string(model->model->name),
          std::to_string(o.batch),
          model->model->takes_sequence() ? std::to_string(model->sequence) : "",
          std::string(precision_name(o.precision)),
          std::string(optimizer_name(o.optimizer)),
          std::to_string(o.accumulation),
          std::to_string(o.steps),
          o.training ? "train" : "infer"};
}

}  // namespace

std::vector<std::string> split_list(std::string_view text, std::string_view what) {
  return split_spec_list(text, what);
}

std::vector<std::int64_t> parse_int_list(std::string_view text, std::string_view what) {
  return parse_list<std::int64_t>(text, what, [what](std::string_view item) { return parse_int(item, what); });
}

std::vector<Bytes> parse_size_list(std::string_view text, std::string_view what) {
  return parse_list<Bytes>(text, what, [what](std::string_view item) {
    try {
      return parse_bytes(item);
    } catch (const Error& error) {
      throw Error(std::string(what) + ": " + error.what());
    }
  });
}

std::vector<ModelAxis> model_axes() {
  std::vector<ModelAxis> axes;
  for (const ModelToken& token : model_tokens()) {
    if (token.axis.empty()) continue;
    auto axis = std::find_if(axes.begin(), axes.end(), [&](const ModelAxis& a) { return a.name == token.axis; });
    if (axis == axes.end()) {
      axes.push_back({std::string(token.axis), token.numbered ? "NUMBERS" : "", ""});
      axis = axes.end() - 1;
    }
    if (token.numbered) {
      axis->help.assign(token.help).append(" (").append(token.word).append("N)");
    } else {
      axis->value_name.append(axis->value_name.empty() ? "" : ",").append(token.word);
      axis->help.append(axis->help.empty() ? "" : "; ").append(token.word).append(": ").append(token.help);
    }
  }
  return axes;
}

const std::vector<std::string>& sweep_columns() {
  static const std::vector<std::string> columns{"point",     "model", "batch", "sequence", "precision", "optimizer",
                                                "accumulation", "steps", "mode", "on_oom"};
  return columns;
}

std::vector<SweepPoint> expand_sweep(const SweepOptions& options) {
  // Each --workload is one spec, its commas its own: several workloads repeat the option.
  std::vector<WorkloadSpec> workloads;
  for (const std::string& workload : options.workloads) workloads.push_back(checked_workload(workload, options.given_workloads));
  const std::vector<PolicyMaker> policies = policy_makers(options.policies, options.given_policies);
  if (workloads.empty()) throw Error("sweep needs --workload (repeat it for several workloads)");
  // --param KEY=LIST: each generator workload becomes one spec per combination of values.
  for (const std::string& param : options.params) {
    const auto equals = param.find('=');
    if (equals == std::string::npos || equals == 0 || equals + 1 == param.size()) {
      throw Error("--param '" + param + "' is not KEY=LIST");
    }
    const std::string key = param.substr(0, equals);
    const std::string list = param.substr(equals + 1);
    std::vector<std::string> values;
    try {
      for (std::int64_t value : parse_int_list(list, "--param " + key)) values.push_back(std::to_string(value));
    } catch (const Error&) {
      try {
        for (Bytes value : parse_size_list(list, "--param " + key)) values.push_back(std::to_string(value));
      } catch (const Error&) {
        for (std::string_view value : split(list, ',')) values.emplace_back(value);
      }
    }
    std::vector<WorkloadSpec> expanded;
    for (const WorkloadSpec& workload : workloads) {
      for (const std::string& value : values) expanded.push_back(with_param(workload, key, value, "--param " + key));
    }
    workloads = std::move(expanded);
  }
  if (policies.empty()) throw Error("sweep needs --policy (a list, or 'all')");

  std::vector<TenantChoice> tenants;
  for (const std::string& tenant : options.tenants) {
    tenants.push_back(parse_tenant(tenant));
    refuse_missing_file(tenants.back().workload);
  }

  const std::vector<DeviceSpec> devices = chosen_devices(options.device);
  const std::vector<std::string> on_ooms = words(options.on_oom, "--on-oom", {"stop", "continue"});

  // Model token axes, in the order of the nested loops below; batch turns innermost.
  std::vector<Axis> token_axes = model_axis_values(options);
  const Axis batches = std::move(token_axes.back());
  token_axes.pop_back();
  const bool tokens_given = batches.values.front().token ||
                            std::any_of(token_axes.begin(), token_axes.end(), [](const Axis& axis) { return axis.values.front().token; });

  std::vector<SweepPoint> points;
  for (const WorkloadSpec& workload : workloads) {
    std::optional<ModelSpec> base;
    if (const ModelSpec* model = workload.model()) base = *model;
    if (tokens_given && !base) {
      throw Error("workload " + workload.text + ": --batch, --precision and the other model options need a model workload");
    }
    // The odometer over the token axes: the last axis turns fastest.
    std::vector<std::size_t> at(token_axes.size(), 0);
    while (true) {
      std::optional<ModelSpec> prefix = base;
      for (std::size_t axis = 0; axis < token_axes.size(); ++axis) {
        const AxisValue& value = token_axes[axis].values[at[axis]];
        if (value.token) set_model_token(*prefix, *value.token, value.value, workload.text);
      }
      for (const DeviceSpec& device : devices) {
        for (const PolicyMaker& policy : policies) {
          for (const std::string& on_oom : on_ooms) {
            for (const AxisValue& batch : batches.values) {
              std::optional<ModelSpec> model = prefix;
              if (batch.token) set_model_token(*model, *batch.token, batch.value, workload.text);
              SweepPoint point;
              point.index = points.size();
              // Unswept, the workload stays as the user spelled it; swept, it is the typed spec printed.
              WorkloadSpec spec = tokens_given ? model_workload(*model) : workload;
              point.workload = spec.text;
              point.policy = policy.text;
              point.scenario.device = device;
              point.scenario.on_oom = on_oom == "stop" ? OnOom::stop : OnOom::continue_run;
              point.scenario.tenants.push_back(TenantSpec{nullptr, policy, 0});
              point.workloads.push_back(std::move(spec));
              for (const auto& [tenant_workload, tenant_policy, tenant_start] : tenants) {
                point.scenario.tenants.push_back(TenantSpec{nullptr, tenant_policy.maker(), tenant_start});
                point.workloads.push_back(tenant_workload);
              }
              point.leading.push_back(std::to_string(point.index));
              for (std::string& value : model_leading(model)) point.leading.push_back(std::move(value));
              point.leading.push_back(on_oom);
              points.push_back(std::move(point));
            }
          }
        }
      }
      std::size_t axis = token_axes.size();
      while (axis > 0 && ++at[axis - 1] == token_axes[axis - 1].values.size()) at[--axis] = 0;
      if (axis == 0) break;
    }
  }
  return points;
}

}  // namespace allocsim
