#include "studies/advise.hpp"

#include <algorithm>
#include <array>
#include <cstdio>
#include <functional>
#include <memory>
#include <tuple>

#include "policies/registry.hpp"
#include "policies/torch_alloc_conf.hpp"
#include "sim/csv_columns.hpp"
#include "sim/engine.hpp"
#include "sim/error.hpp"
#include "sim/spec.hpp"
#include "studies/alloc_conf_choice.hpp"
#include "studies/outcome.hpp"
#include "studies/parallel.hpp"
#include "studies/sweep_run.hpp"
#include "workloads/catalogue.hpp"
#include "workloads/model/model_spec.hpp"

namespace allocsim {
namespace {

// The advised program: its workload as run, and the framework that runs it.
struct Subject {
  std::optional<ModelSpec> model;  // none: a trace
  WorkloadSpec workload;
  Framework framework;
  PolicySpec policy;  // the allocator it runs with now
};

std::string_view framework_word(Framework framework) { return framework == Framework::tf ? "tf" : "torch"; }

// The framework's own allocator, as it runs when nothing is set.
PolicySpec default_policy(Framework framework) {
  return policy_spec(Spec{framework == Framework::tf ? "bfc" : "caching", {}});
}

// Which framework's settings a policy takes: its row's, when advise knows that framework's
// settings (PyTorch's, TensorFlow's).
std::optional<Framework> framework_of_policy(const PolicySpec& policy) {
  const Framework framework = policy.row->framework;
  if (framework == Framework::tf || framework == Framework::torch) return framework;
  return std::nullopt;
}

// The advised program's allocator: as given, when it is one of its framework's.
PolicySpec policy_of(const AdviseStudy& study, Framework framework) {
  if (!study.policy) return default_policy(framework);
  if (framework_of_policy(*study.policy) != framework) {
    throw Error("advise: --policy " + study.policy->text + " is not one of " +
                (framework == Framework::tf ? "TensorFlow's allocators (bfc, growth and their options)"
                                            : "PyTorch's allocators (caching, expandable and their options)"));
  }
  return *study.policy;
}

Subject subject_of(const AdviseStudy& study) {
  const WorkloadSpec& given = study.workload;
  if (!given.model()) {
    if (!study.framework) {
      throw Error("advise: workload " + given.text +
                  " is not a model; say which framework runs it with --framework tf or --framework torch");
    }
    return {std::nullopt, given, *study.framework, policy_of(study, *study.framework)};
  }
  ModelSpec model = *given.model();
  if (study.framework && *study.framework != model.options.framework) {
    if (model.names(ModelKey::framework)) {
      throw Error("advise: workload " + given.text + " names " + std::string(framework_word(model.options.framework)) +
                  ", but --framework says " + std::string(framework_word(*study.framework)));
    }
    set_model_token(model, model_token(framework_word(*study.framework)), 0, given.text);
  }
  return {model, model_workload(model), model.options.framework, policy_of(study, model.options.framework)};
}

// `policy` with `key` set to `value` (replaced where the spec has it).
// The spec with key=value in place of the key as given, in our spelling or the framework's
// (max_split_size_mb=256 is replaced by max_split_size=128MiB, not given twice).
PolicySpec with_arg(const PolicySpec& policy, const std::string& key, const std::string& value) {
  Spec spec = policy.spec;
  std::string_view native;
  for (const ParamInfo& param : policy.row->params) {
    if (param.key == key) native = param.native;
  }
  set_arg(spec, key, value, native);
  return policy_spec(std::move(spec));
}

PolicySpec renamed(const PolicySpec& policy, const std::string& name) {
  Spec spec = policy.spec;
  spec.name = name;
  return policy_spec(std::move(spec));
}

std::string mib_value(std::int64_t mib) { return std::to_string(mib) + "MiB"; }

// A memory fraction in hundredths, as PyTorch and the policies read it: 37 -> "0.37".
std::string hundredths(std::int64_t percent) {
  char text[16];
  std::snprintf(text, sizeof text, "%.2f", static_cast<double>(percent) / 100.0);
  return text;
}

std::string memory_limit_call(std::int64_t mib) {
  return "tf.config.set_logical_device_configuration(gpu, [tf.config.LogicalDeviceConfiguration(memory_limit=" +
         std::to_string(mib) + ")]) before the first tensor";
}
constexpr const char* kGrowthCall = "tf.config.experimental.set_memory_growth(gpu, True)";


// A candidate to run: fixed, or with the values of its settings searched by bisection: one
// value in the scenario as a whole, or one per process, each process alone on the device (a
// memory limit for every process at once).
using Values = std::vector<std::int64_t>;
struct Plan {
  std::function<AdviseCandidate(const Values& values)> at;  // a value per search, in order
  struct Search {
    std::int64_t low;
    std::int64_t high;
    bool smallest;       // the smallest value that fits (a limit), else the largest (a reserve)
    std::size_t tenant;  // whose fitting the value decides: 0 the advised workload, i the ith tenant
    bool alone = false;  // decided by that process alone on the device, the others absent
  };
  std::vector<Search> searches;  // empty: a fixed candidate

  // Each search's generous end (the largest limit, the smallest reserve): a value that fits
  // when any does, or the answer when none does.
  Values generous() const {
    Values values;
    for (const Search& s : searches) values.push_back(s.smallest ? s.high : s.low);
    return values;
  }
};

class Planner {
  // One model change: kept so that pairs() can apply two.
  struct ModelEdit {
    std::string what;
    std::string change;
    Impact impact;
    std::function<void(ModelSpec&)> edit;
    bool training_only = false;  // nothing to change in inference: the loop, the optimizer, what trains
  };

 public:
  Planner(const AdviseStudy& study, const Subject& subject) : study_(study), subject_(subject) {}

  std::vector<Plan> plans(std::vector<AdviseNote>& notes) {
    std::string nothing = "nothing: ";
    if (study_.policy) {
      nothing += "the allocator as it runs now";
    } else {
      nothing += tf() ? "TensorFlow's default allocator (BFC, preallocating)" : "PyTorch's default caching allocator";
    }
    AdviseCandidate as_is = make_candidate("as it is", nothing, Impact::none, subject_.workload, base_policy());
    as_is.changes = 0;
    add(std::move(as_is));
    if (subject_.framework == Framework::tf) {
      tf_settings();
    } else {
      torch_settings();
    }
    for (std::size_t tenant = 1; tenant <= study_.tenants.size(); ++tenant) other_tenant(tenant);
    every_process();
    settings_.assign(plans_.begin() + 1, plans_.end());
    if (subject_.model) model_changes(notes);
    for (AdviseNote& note : unmodelled_) notes.push_back(std::move(note));
    unmodelled_.clear();
    return plans_;
  }

  // Two changes at a time, for when no single one fits: each setting with each model change,
  // and each two model changes that touch different tokens; never one that fits alone.
  // `fits` says which of plans() fit, in its order (the program as it is first).
  std::vector<Plan> pairs(const std::vector<bool>& fits) const {
    const auto setting_fits = [&](std::size_t i) { return fits.at(1 + i); };
    const auto model_fits = [&](std::size_t j) { return fits.at(1 + settings_.size() + j); };
    std::vector<Plan> pairs;
    for (std::size_t i = 0; i < settings_.size(); ++i) {
      for (std::size_t j = 0; j < models_.size(); ++j) {
        if (setting_fits(i) || model_fits(j)) continue;
        const Plan& setting = settings_[i];
        const ModelEdit& model = models_[j];
        const WorkloadSpec workload = model_workload(edited({&model}));
        pairs.push_back(Plan{[this, setting, model, workload](const Values& values) {
                               AdviseCandidate candidate = setting.at(values);
                               candidate.workload = workload;
                               candidate.effective_batch = effective_batch(workload);
                               candidate.what += " + " + model.what;
                               candidate.change += "; and " + model.change;
                               candidate.impact = std::max(candidate.impact, model.impact);
                               candidate.changes = 2;
                               return candidate;
                             },
                             setting.searches});
      }
    }
    for (std::size_t i = 0; i < models_.size(); ++i) {
      for (std::size_t j = i + 1; j < models_.size(); ++j) {
        if (model_fits(i) || model_fits(j)) continue;
        const ModelEdit& a = models_[i];
        const ModelEdit& b = models_[j];
        const ModelSpec both = edited({&a, &b});
        // Edits of one token (half the batch, accumulation) replace each other: no pair.
        const std::string spelled = to_string(both);
        if (spelled != to_string(edited({&b, &a})) || spelled == to_string(edited({&a})) ||
            spelled == to_string(edited({&b}))) {
          continue;
        }
        if (!why_not_modelled(both).empty()) continue;  // LoRA and QLoRA: one rank
        // Inference has no training loop, optimizer or trained parameters to change.
        if ((a.impact == Impact::inference && b.training_only) || (b.impact == Impact::inference && a.training_only)) {
          continue;
        }
        AdviseCandidate candidate = make_candidate(a.what + " + " + b.what, a.change + "; and " + b.change,
                                                   std::max(a.impact, b.impact), model_workload(both), base_policy());
        candidate.changes = 2;
        pairs.push_back(Plan{[candidate](const Values&) { return candidate; }, {}});
      }
    }
    return pairs;
  }

 private:
  const PolicySpec& base_policy() const { return subject_.policy; }
  bool runs(std::string_view name) const { return base_policy().row->name == name; }
  bool tf() const { return subject_.framework == Framework::tf; }

  static std::int64_t effective_batch(const WorkloadSpec& workload) {
    const ModelSpec* model = workload.model();
    return model ? model->options.batch * model->options.accumulation : 0;
  }

  AdviseCandidate make_candidate(std::string what, std::string change, Impact impact, WorkloadSpec workload,
                                 PolicySpec policy) const {
    AdviseCandidate candidate{std::move(what), std::move(change), impact, std::move(workload), std::move(policy),
                              study_.tenants};
    candidate.effective_batch = effective_batch(candidate.workload);
    return candidate;
  }

  void add(AdviseCandidate candidate) {
    plans_.push_back(Plan{[candidate](const Values&) { return candidate; }, {}});
  }

  void add_search(std::function<AdviseCandidate(std::int64_t)> at, Plan::Search search) {
    plans_.push_back(Plan{[at = std::move(at)](const Values& values) { return at(values.at(0)); }, {search}});
  }

  std::int64_t capacity_mib() const { return static_cast<std::int64_t>(study_.device.capacity / 1_MiB); }

  void tf_settings() {
    if (!runs("growth")) {
      add(make_candidate("memory growth", std::string(kGrowthCall) + " before the first tensor", Impact::setting,
                         subject_.workload, renamed(base_policy(), "growth")));
    }
    // TensorFlow refuses memory growth on a device with a virtual device configuration.
    const std::string instead = runs("growth") ? "instead of memory growth, " : "";
    add_search(
        [this, instead](std::int64_t mib) {
          return make_candidate("memory_limit", instead + memory_limit_call(mib), Impact::setting, subject_.workload,
                                with_arg(renamed(base_policy(), "bfc"), "limit", mib_value(mib)));
        },
        {1, capacity_mib(), true, 0});
    const DeviceSpec& device = study_.device;
    const std::int64_t usable_mib =
        static_cast<std::int64_t>((device.capacity - std::min(device.capacity, device.context_overhead)) / 1_MiB);
    add_search(
        [this](std::int64_t mib) {
          return make_candidate(
              "system reserve",
              "TF_DEVICE_MIN_SYS_MEMORY_IN_MB=" + std::to_string(mib) + " in the environment before TensorFlow starts",
              Impact::setting, subject_.workload, with_arg(base_policy(), "reserve", mib_value(mib)));
        },
        {0, std::max<std::int64_t>(0, usable_mib - 1), false, 0});
  }

  void torch_settings() {
    if (!runs("expandable")) {
      add(make_candidate("expandable segments", *alloc_conf_line(Spec{"expandable", {}}, ""), Impact::setting,
                         subject_.workload, renamed(base_policy(), "expandable")));
    }
    add(make_candidate("max_split_size", *alloc_conf_line(Spec{"caching", {{"max_split_size", "128MiB"}}}, ""), Impact::setting,
                       subject_.workload, with_arg(base_policy(), "max_split_size", "128MiB")));
    add(make_candidate("garbage collection",
                       *alloc_conf_line(Spec{"caching", {{"gc_threshold", "0.8"}}}, "") +
                           " with torch.cuda.set_per_process_memory_fraction(1.0) (the threshold is a share of that cap)",
                       Impact::setting, subject_.workload,
                       with_arg(with_arg(base_policy(), "fraction", "1"), "gc_threshold", "0.8")));
    add_search(
        [this](std::int64_t percent) {
          return make_candidate("memory fraction",
                                "torch.cuda.set_per_process_memory_fraction(" + hundredths(percent) + ")",
                                Impact::setting, subject_.workload,
                                with_arg(base_policy(), "fraction", hundredths(percent)));
        },
        {1, 100, true, 0});
  }

  // The other process's own limit: "a second process on a 16 GB card".
  void other_tenant(std::size_t tenant) {
    const TenantChoice& given = study_.tenants[tenant - 1];
    const std::optional<Framework> framework = framework_of_policy(given.policy);
    if (!framework) return;
    const std::string in = "in tenant " + std::to_string(tenant) + " (" + given.workload.text + "): ";
    const auto changed = [this, tenant](std::string what, std::string change, PolicySpec policy) {
      AdviseCandidate candidate =
          make_candidate(std::move(what), std::move(change), Impact::setting, subject_.workload, base_policy());
      candidate.tenants[tenant - 1].policy = std::move(policy);
      return candidate;
    };
    if (*framework == Framework::tf) {
      if (given.policy.row->name == "bfc") {
        add(changed("memory growth in tenant " + std::to_string(tenant), in + kGrowthCall,
                    renamed(given.policy, "growth")));
      }
      add_search(
          [tenant, given, in, changed](std::int64_t mib) {
            return changed("memory_limit in tenant " + std::to_string(tenant),
                           in + memory_limit_call(mib), with_arg(given.policy, "limit", mib_value(mib)));
          },
          {1, capacity_mib(), true, tenant});
    } else {
      add_search(
          [tenant, given, in, changed](std::int64_t percent) {
            return changed("memory fraction in tenant " + std::to_string(tenant),
                           in + "torch.cuda.set_per_process_memory_fraction(" + hundredths(percent) + ")",
                           with_arg(given.policy, "fraction", hundredths(percent)));
          },
          {1, 100, true, tenant});
    }
  }

  // The processes on the device: 0 the advised workload, then each tenant in turn.
  std::size_t processes() const { return 1 + study_.tenants.size(); }
  const PolicySpec& policy_of_process(std::size_t process) const {
    return process == 0 ? base_policy() : study_.tenants[process - 1].policy;
  }
  std::optional<Framework> framework_of_process(std::size_t process) const {
    return process == 0 ? std::optional<Framework>(subject_.framework) : framework_of_policy(policy_of_process(process));
  }
  std::string process_name(std::size_t process) const {
    return process == 0 ? "the workload" : "tenant " + std::to_string(process);
  }
  // The candidate with process `process` under `policy` (the others as they run now).
  static void set_policy(AdviseCandidate& candidate, std::size_t process, PolicySpec policy) {
    (process == 0 ? candidate.policy : candidate.tenants[process - 1].policy) = std::move(policy);
  }
  // "the workload, tenant 1 and tenant 2": the processes a change reaches.
  std::string listed(const std::vector<std::size_t>& changed) const {
    std::string text;
    for (std::size_t i = 0; i < changed.size(); ++i) {
      text += (i == 0 ? "" : i + 1 == changed.size() ? " and " : ", ") + process_name(changed[i]);
    }
    return text;
  }

  // What the articles this project grew from advise for several processes on one card: the
  // change in every process at once. Each where it reaches two processes or more (one is
  // a single change above): memory growth in every TensorFlow process, a memory limit for
  // every process (TensorFlow's memory_limit, PyTorch's memory fraction), each the smallest
  // with which the process runs alone, so that they sum under the card if any do, and
  // TF_GPU_ALLOCATOR=cuda_malloc_async in every TensorFlow process. A process whose
  // allocator is no framework's (a trace under firstfit) stays as it is.
  void every_process() {
    if (study_.tenants.empty()) return;
    std::vector<std::size_t> tf_bfc;
    std::vector<std::size_t> tf;
    std::vector<std::size_t> limited;
    for (std::size_t p = 0; p < processes(); ++p) {
      const std::optional<Framework> framework = framework_of_process(p);
      if (!framework) continue;
      limited.push_back(p);
      if (*framework != Framework::tf) continue;
      tf.push_back(p);
      if (policy_of_process(p).row->name == "bfc") tf_bfc.push_back(p);
    }
    const auto base = [this](std::string what, std::string change) {
      return make_candidate(std::move(what), std::move(change), Impact::setting, subject_.workload, base_policy());
    };
    // "every process" where every one is TensorFlow's, else "every TensorFlow process".
    const std::string every_tf = tf.size() == processes() ? "every process" : "every TensorFlow process";
    if (tf_bfc.size() >= 2) {
      AdviseCandidate candidate =
          base("memory growth in " + every_tf,
               "in " + listed(tf_bfc) + ": " + kGrowthCall + " before the first tensor (or TF_FORCE_GPU_ALLOW_GROWTH=true "
               "in each one's environment)");
      for (const std::size_t p : tf_bfc) set_policy(candidate, p, renamed(policy_of_process(p), "growth"));
      add(std::move(candidate));
    }
    if (limited.size() >= 2) {
      // TensorFlow refuses memory growth beside a virtual device configuration: bfc with the limit.
      const auto limit_policy = [this](std::size_t p, std::int64_t value) {
        const PolicySpec& policy = policy_of_process(p);
        if (*framework_of_process(p) == Framework::tf) return with_arg(renamed(policy, "bfc"), "limit", mib_value(value));
        return with_arg(policy, "fraction", hundredths(value));
      };
      std::vector<Plan::Search> searches;
      for (const std::size_t p : limited) {
        const bool tf_limit = *framework_of_process(p) == Framework::tf;
        searches.push_back({1, tf_limit ? capacity_mib() : 100, true, p, true});
      }
      plans_.push_back(Plan{[this, limited, limit_policy](const Values& values) {
                              std::string change;
                              Bytes sum = 0;
                              AdviseCandidate candidate = make_candidate("a memory limit per process", "", Impact::setting,
                                                                         subject_.workload, base_policy());
                              for (std::size_t i = 0; i < limited.size(); ++i) {
                                const std::size_t p = limited[i];
                                const std::int64_t value = values.at(i);
                                const bool tf_limit = *framework_of_process(p) == Framework::tf;
                                change += (i == 0 ? "in " : "; in ") + process_name(p) + ": " +
                                          (tf_limit ? memory_limit_call(value)
                                                    : "torch.cuda.set_per_process_memory_fraction(" + hundredths(value) + ")");
                                sum += tf_limit ? static_cast<Bytes>(value) * 1_MiB
                                                : study_.device.capacity / 100 * static_cast<Bytes>(value);
                                set_policy(candidate, p, limit_policy(p, value));
                              }
                              candidate.change = change + " (" + format_bytes(sum) + " in all, of the card's " +
                                                 format_bytes(study_.device.capacity) + " less a CUDA context each)";
                              return candidate;
                            },
                            std::move(searches)});
    }
    if (tf.size() >= 2) {
      AdviseCandidate candidate =
          base("cuda_malloc_async in " + every_tf,
               "TF_GPU_ALLOCATOR=cuda_malloc_async in the environment of " + listed(tf) +
                   ", before TensorFlow starts: CUDA's stream-ordered pool in place of BFC");
      for (const std::size_t p : tf) set_policy(candidate, p, policy_spec(Spec{"tf-async", {}}));
      add(std::move(candidate));
    }
  }

  // The advised model with one token changed, under the framework's default allocator.
  // `edit` is kept for pairs(), so it captures by value.
  // One whose spelling the zoo refuses (LoRA with ZeRO) is a note instead.
  void model_change(std::string what, std::string change, Impact impact, std::function<void(ModelSpec&)> edit,
                    bool training_only) {
    ModelEdit model{std::move(what), std::move(change), impact, std::move(edit), training_only};
    const ModelSpec spec = edited({&model});
    if (const std::string why = why_not_modelled(spec); !why.empty()) {
      unmodelled_.push_back({model.what, "not modelled: " + why});
      return;
    }
    models_.push_back(std::move(model));
    add(make_candidate(models_.back().what, models_.back().change, impact, model_workload(spec), base_policy()));
  }

  // Empty when the zoo models `spec` (check_model_spec), else why not.
  static std::string why_not_modelled(const ModelSpec& spec) {
    try {
      check_model_spec(spec, to_string(spec));
    } catch (const Error& error) {
      return error.what();
    }
    return {};
  }

  ModelSpec edited(std::initializer_list<const ModelEdit*> edits) const {
    ModelSpec spec = *subject_.model;
    for (const ModelEdit* edit : edits) edit->edit(spec);
    return spec;
  }

  void set(ModelSpec& spec, std::string_view word, std::int64_t value = 0) const {
    set_model_token(spec, model_token(word), value, subject_.workload.text);
  }

  // The spelling leaves `key` out (its value stays): where another key spells it instead.
  static void forget(ModelSpec& spec, ModelKey key) { spec.given &= ~(std::uint64_t{1} << static_cast<unsigned>(key)); }

  void model_changes(std::vector<AdviseNote>& notes) {
    const ModelSpec& model = *subject_.model;
    const LoweringOptions& o = model.options;
    const bool training = o.training;
    if (o.precision == Precision::fp32) {
      model_change("amp (fp16 autocast)",
                   tf() ? "tf.keras.mixed_precision.set_global_policy('mixed_float16')"
                        : std::string("torch.autocast(device_type='cuda', dtype=torch.float16) around the forward pass") +
                              (training ? ", with torch.amp.GradScaler('cuda') for backward" : ""),
                   Impact::precision, [=, this](ModelSpec& s) { set(s, "amp"); }, false);
      if (study_.device.compute_capability >= 80) {
        model_change("bf16 autocast",
                     tf() ? "tf.keras.mixed_precision.set_global_policy('mixed_bfloat16')"
                          : "torch.autocast(device_type='cuda', dtype=torch.bfloat16) around the forward pass",
                     Impact::precision, [=, this](ModelSpec& s) { set(s, "bf16"); }, false);
      } else {
        notes.push_back({"bf16 autocast", "not on " + study_.device.name + ": compute capability " +
                                              std::to_string(study_.device.compute_capability / 10) + "." +
                                              std::to_string(study_.device.compute_capability % 10) +
                                              ", bfloat16 needs 8.0 or later"});
      }
    }
    const std::int64_t batch = o.batch;
    const std::int64_t effective = batch * o.accumulation;
    const std::string step = tf() ? "optimizer.apply_gradients" : "optimizer.step()";
    if (batch >= 2) {
      model_change("half the batch",
                   "batch " + std::to_string(batch / 2) + " instead of " + std::to_string(batch) +
                       ": the effective batch halves",
                   Impact::batch, [=, this](ModelSpec& s) { set(s, "b", batch / 2); }, false);
    }
    for (const int steps : {2, 4}) {
      if (!training || batch % steps != 0) continue;
      const std::int64_t micro = batch / steps;
      model_change("batch " + std::to_string(micro) + " x " + std::to_string(steps * o.accumulation) +
                       " accumulation steps",
                   "batch " + std::to_string(micro) + ", gradients summed over " + std::to_string(steps * o.accumulation) +
                       " micro-batches before each " + step + ": the effective batch stays " + std::to_string(effective),
                   Impact::loop,
                   [=, this](ModelSpec& s) {
                     set(s, "b", micro);
                     set(s, "acc", steps * o.accumulation);
                   },
                   true);
    }
    if (training) {
      model_change("inference only",
                   tf() ? "model(x, training=False) outside tf.GradientTape, or model.predict(x)"
                        : "model.eval() and torch.no_grad()" + inference_dtype(),
                   Impact::inference, [=, this](ModelSpec& s) { set(s, "infer"); }, false);
      if (o.optimizer == Optimizer::adam || o.optimizer == Optimizer::adamw) {
        const std::string adam = o.optimizer == Optimizer::adam ? "Adam" : "AdamW";
        model_change("SGD with momentum instead of " + adam,
                     (tf() ? "tf.keras.optimizers.SGD(learning_rate=..., momentum=0.9) instead of "
                           : "torch.optim.SGD(model.parameters(), lr=..., momentum=0.9) instead of ") + adam,
                     Impact::optimizer, [=, this](ModelSpec& s) { set(s, "momentum"); }, true);
      } else if (o.optimizer == Optimizer::momentum) {
        model_change("SGD without momentum",
                     tf() ? "tf.keras.optimizers.SGD(learning_rate=...) without momentum: no momentum slots"
                          : "torch.optim.SGD(model.parameters(), lr=...) without momentum: no momentum buffers",
                     Impact::optimizer, [=, this](ModelSpec& s) { set(s, "sgd"); }, true);
      }
      // A run that checkpoints already has nothing to gain from the suggestion.
      if (!o.checkpoint) checkpointing(notes);
    }
    if (model.model->is_decoder()) llm_changes(notes);
  }

  // What practitioners reach for with a language model, each where the zoo's decoder tokens
  // express it; what they cannot express is a note.
  void llm_changes(std::vector<AdviseNote>& notes) {
    const ModelSpec& model = *subject_.model;
    if (tf()) {
      notes.push_back({"fused and 8-bit AdamW, LoRA, QLoRA, ZeRO, FSDP, a paged KV cache",
                       "PyTorch's (bitsandbytes, PEFT, DeepSpeed, vLLM): not tried under TensorFlow"});
      return;
    }
    if (model.generation.given()) {
      if (model.generation.cache != KvCacheKind::paged) {
        model_change("a paged KV cache",
                     "vLLM's PagedAttention (block_size=16) in place of generate()'s cache: each sequence's keys and "
                     "values in blocks of 16 tokens as it grows, a finished sequence's blocks freed",
                     Impact::implementation, [this](ModelSpec& s) { set(s, "cache=paged"); }, false);
      }
      return;
    }
    if (!model.options.training) return;
    optimizer_kernels();
    adapters();
    sharding(notes);
    if (model.options.precision != Precision::fp32) {
      notes.push_back({"bf16 parameters without fp32 master weights",
                       "not modelled: the zoo's amp and bf16 are autocast over fp32 trained parameters"});
    }
  }

  // Fused AdamW, and bitsandbytes' paged and 8-bit AdamW. Which group each is in: a fused
  // kernel and paged 32-bit state keep the training (AdamW's update on fp32 moments; paging
  // moves the state to unified memory, which costs time when it pages, not numerics: the
  // impact `offload`, after sharding, as the slowest way to keep it); 8-bit state changes it
  // (both moments quantised blockwise to 8 bits: another optimizer's numerics, close to
  // AdamW's in the bitsandbytes paper but not the same), unless the job runs 8-bit state
  // already and only pages it.
  void optimizer_kernels() {
    const LoweringOptions& o = subject_.model->options;
    if ((o.optimizer == Optimizer::adam || o.optimizer == Optimizer::adamw) && !o.fused) {
      const bool w = o.optimizer == Optimizer::adamw;
      const std::string name = w ? "AdamW" : "Adam";
      // The edit names the optimizer too, so that no pair makes it fused and another optimizer.
      model_change("fused " + name,
                   "torch.optim." + name +
                       "(model.parameters(), lr=..., fused=True): one kernel per step, without the foreach "
                       "temporaries (a parameter-sized set during each step)",
                   Impact::implementation,
                   [this, w](ModelSpec& s) {
                     set(s, w ? "adamw" : "adam");
                     set(s, "fused");
                   },
                   true);
    }
    const auto eight_bit = [](Optimizer optimizer) {
      return optimizer == Optimizer::adamw8bit || optimizer == Optimizer::paged_adamw8bit;
    };
    const auto paged = [](Optimizer optimizer) {
      return optimizer == Optimizer::paged_adamw32bit || optimizer == Optimizer::paged_adamw8bit;
    };
    const Optimizer now = o.optimizer;
    const bool adamw = now == Optimizer::adamw || now == Optimizer::adamw32bit || now == Optimizer::paged_adamw32bit ||
                       eight_bit(now);
    if (!adamw) return;
    struct Choice {
      Optimizer optimizer;
      std::string_view word;
      std::string_view what;
      std::string_view change;
    };
    const std::array<Choice, 3> choices{{
        {Optimizer::paged_adamw32bit, "pagedadamw32bit", "paged AdamW (32-bit state)",
         "bnb.optim.PagedAdamW32bit(model.parameters(), lr=...) (Trainer: optim=\"paged_adamw_32bit\"): AdamW's fp32 "
         "moments in CUDA unified memory, outside PyTorch's allocator and these figures; paged to host memory when "
         "the card runs short (slower steps, the same numerics)"},
        {Optimizer::adamw8bit, "adamw8bit", "8-bit AdamW",
         "bnb.optim.AdamW8bit(model.parameters(), lr=...) (Trainer: optim=\"adamw_bnb_8bit\"): both moments "
         "quantised to 8 bits in blocks of 256, one fused kernel"},
        {Optimizer::paged_adamw8bit, "pagedadamw8bit", "paged 8-bit AdamW",
         "bnb.optim.PagedAdamW8bit(model.parameters(), lr=...) (Trainer: optim=\"paged_adamw_8bit\"): 8-bit "
         "moments, those of large tensors in CUDA unified memory, paged to host memory when the card runs short"},
    }};
    for (const Choice& choice : choices) {
      // Never back to more state on the card: 8-bit to 32-bit, paged to not paged.
      if (choice.optimizer == now || (eight_bit(now) && !eight_bit(choice.optimizer)) ||
          (paged(now) && !paged(choice.optimizer))) {
        continue;
      }
      const Impact impact = eight_bit(now) == eight_bit(choice.optimizer) ? Impact::offload : Impact::optimizer;
      const std::string word(choice.word);
      model_change(std::string(choice.what), std::string(choice.change), impact,
                   [this, word](ModelSpec& s) { set(s, word); }, true);
    }
  }

  // Inference holds the weights in the compute dtype, as the lowering does (torch).
  std::string inference_dtype() const {
    const LoweringOptions& o = subject_.model->options;
    if (o.precision == Precision::fp32 || o.fp32_base) return "";
    return std::string(", the weights in ") + (o.precision == Precision::bf16 ? "bf16 (model.to(torch.bfloat16))"
                                                                               : "fp16 (model.half())");
  }

  // How a LoRA base is loaded: in the compute dtype (from_pretrained(torch_dtype=...)), as
  // the lowering holds it, unless the spec keeps it in fp32.
  std::string base_dtype() const {
    const LoweringOptions& o = subject_.model->options;
    if (o.precision == Precision::fp32 || o.fp32_base) return "";
    return std::string(", the base loaded in ") + (o.precision == Precision::bf16 ? "bf16" : "fp16") +
           " (from_pretrained(..., torch_dtype=" + (o.precision == Precision::bf16 ? "torch.bfloat16" : "torch.float16") +
           "))";
  }

  // LoRA and QLoRA (PEFT, bitsandbytes' NF4): the base frozen, adapters trained. LoRA over a
  // base in the compute dtype ranks before QLoRA's 4-bit one (impact quantized): a user tries
  // it first.
  void adapters() {
    const DecoderConfig& d = subject_.model->decoder;
    if (d.nf4) return;
    if (d.lora == 0) {
      model_change("LoRA r=16 on q_proj and v_proj",
                   "peft.get_peft_model(model, LoraConfig(r=16)): the base frozen (no gradients, no optimizer state), "
                   "rank-16 adapters beside q_proj and v_proj trained" + base_dtype(),
                   Impact::adapters, [this](ModelSpec& s) { set(s, "lora=", 16); }, true);
      model_change("QLoRA r=16 on every linear, a 4-bit NF4 base",
                   "from_pretrained(..., quantization_config=BitsAndBytesConfig(load_in_4bit=True, "
                   "bnb_4bit_quant_type=\"nf4\", bnb_4bit_use_double_quant=True)), then "
                   "peft.get_peft_model(model, LoraConfig(r=16, target_modules=\"all-linear\"))",
                   Impact::quantized,
                   [this](ModelSpec& s) {
                     set(s, "qlora=", 16);
                     set(s, "lora_targets=all");
                   },
                   true);
      return;
    }
    const std::int64_t rank = d.lora;
    model_change("QLoRA: the LoRA base in 4-bit NF4",
                 "from_pretrained(..., quantization_config=BitsAndBytesConfig(load_in_4bit=True, "
                 "bnb_4bit_quant_type=\"nf4\", bnb_4bit_use_double_quant=True)) under the same adapters",
                 Impact::precision,
                 [this, rank](ModelSpec& s) {
                   forget(s, ModelKey::lora);  // qlora= gives the rank in its place
                   set(s, "qlora=", rank);
                 },
                 true);
  }

  // ZeRO-1/2/3 and FSDP over the ranks the job runs on: the workload's own world when it
  // shards already (then only the higher ZeRO stages), else --ranks.
  void sharding(std::vector<AdviseNote>& notes) {
    const LoweringOptions& o = subject_.model->options;
    if (o.sharding == Sharding::zero3 || o.sharding == Sharding::fsdp) return;  // everything is sharded
    const std::int64_t ranks = o.sharding != Sharding::none ? o.world : study_.ranks;
    if (subject_.model->decoder.lora > 0) {
      notes.push_back({"ZeRO-1/2/3 and FSDP", "not modelled with LoRA or QLoRA (frozen parameters)"});
      return;
    }
    if (ranks < 2) {
      notes.push_back({"ZeRO-1/2/3 and FSDP", "one rank: --ranks N (the GPUs the job runs on) shards over them"});
      return;
    }
    const std::string over = " over " + std::to_string(ranks) + " ranks";
    // ZeRO and FSDP take the place of DistributedDataParallel, which the job then drops.
    const bool ddp = o.ddp_bucket_mib > 0;
    const std::string instead = ddp ? ", in place of DistributedDataParallel" : "";
    const auto no_ddp = [](ModelSpec& s) {
      forget(s, ModelKey::ddp);
      s.options.ddp_bucket_mib = 0;
    };
    const std::array<std::pair<Sharding, std::string_view>, 3> stages{{
        {Sharding::zero1, "the optimizer state and fp32 master weights sharded"},
        {Sharding::zero2, "gradients sharded too"},
        {Sharding::zero3, "parameters sharded too, each layer gathered before it runs"},
    }};
    for (const auto& [stage, what] : stages) {
      if (stage <= o.sharding) continue;
      const int number = static_cast<int>(stage);  // zero1 is 1
      const std::string word = "zero=" + std::to_string(number);
      model_change("ZeRO-" + std::to_string(number) + over,
                   "DeepSpeed \"zero_optimization\": {\"stage\": " + std::to_string(number) + "} on the " +
                       std::to_string(ranks) + " ranks" + instead + ": " + std::string(what),
                   Impact::sharding,
                   [this, word, ranks, no_ddp](ModelSpec& s) {
                     no_ddp(s);
                     set(s, word);
                     set(s, "world=", ranks);
                   },
                   true);
    }
    if (o.sharding != Sharding::none) return;
    std::string mixed;
    if (o.precision != Precision::fp32) {
      mixed = std::string(", mixed_precision=MixedPrecision(param_dtype=") +
              (o.precision == Precision::bf16 ? "torch.bfloat16" : "torch.float16") + ")";
    }
    model_change("FSDP" + over,
                 "FullyShardedDataParallel(model, sharding_strategy=ShardingStrategy.FULL_SHARD, "
                 "auto_wrap_policy=transformer_auto_wrap_policy" +
                     mixed + ") on the " + std::to_string(ranks) + " ranks" + instead +
                     ": fp32 shards, each layer gathered before it runs",
                 Impact::sharding,
                 [this, ranks, no_ddp](ModelSpec& s) {
                   no_ddp(s);
                   set(s, "fsdp=", ranks);
                 },
                 true);
  }

  // Activation checkpointing where the zoo models it (a `ckpt` token); never invented.
  void checkpointing(std::vector<AdviseNote>& notes) {
    const std::string what = "activation checkpointing";
    const std::string api = tf() ? "tf.recompute_grad" : "torch.utils.checkpoint.checkpoint";
    const auto tokens = model_tokens();
    const auto ckpt = std::find_if(tokens.begin(), tokens.end(), [](const ModelToken& t) { return t.word == "ckpt"; });
    const std::string model_name(subject_.model->model->name);
    if (ckpt == tokens.end()) {
      notes.push_back({what + " (" + api + ")", "not modelled for " + model_name + ": the zoo has no checkpointing token"});
      return;
    }
    ModelSpec spec = *subject_.model;
    try {
      set_model_token(spec, *ckpt, ckpt->numbered ? 1 : 0, subject_.workload.text);
    } catch (const Error& error) {
      notes.push_back({what + " (" + api + ")", "not modelled for " + model_name + ": " + error.what()});
      return;
    }
    const ModelToken* token = &*ckpt;
    model_change(what, api + " around each block: activations recomputed in backward", Impact::loop,
                 [this, token](ModelSpec& s) { set_model_token(s, *token, token->numbered ? 1 : 0, subject_.workload.text); },
                 true);
  }

  const AdviseStudy& study_;
  const Subject& subject_;
  std::vector<Plan> plans_;
  std::vector<Plan> settings_;     // the allocator and tenant changes among plans_
  std::vector<ModelEdit> models_;  // the model changes among plans_
  std::vector<AdviseNote> unmodelled_;  // model changes the zoo does not parse, and why
};

// One scenario, built and replayed the way `allocsim run` does: the advised tenant first,
// then the others in the order given.
// Every tenant as given: its policy and its start.
RunResult replay(const AdviseCandidate& candidate, const DeviceSpec& device, TraceCache& traces) {
  Scenario scenario;
  scenario.device = device;
  scenario.tenants.push_back(
      TenantSpec{traces.get(candidate.workload, device.compute_capability), candidate.policy.maker(), 0});
  for (const TenantChoice& tenant : candidate.tenants) {
    scenario.tenants.push_back(
        TenantSpec{traces.get(tenant.workload, device.compute_capability), tenant.policy.maker(), tenant.start});
  }
  return run(scenario);
}

// One process of the candidate (0 the advised workload, i its ith tenant) alone on the device.
RunResult replay_alone(const AdviseCandidate& candidate, std::size_t process, const DeviceSpec& device,
                       TraceCache& traces) {
  Scenario scenario;
  scenario.device = device;
  const WorkloadSpec& workload = process == 0 ? candidate.workload : candidate.tenants.at(process - 1).workload;
  const PolicySpec& policy = process == 0 ? candidate.policy : candidate.tenants.at(process - 1).policy;
  scenario.tenants.push_back(TenantSpec{traces.get(workload, device.compute_capability), policy.maker(), 0});
  return run(scenario);
}

AdviseLine line_of(AdviseCandidate candidate, const RunResult& result) {
  AdviseLine line;
  line.candidate = std::move(candidate);
  line.fits = std::all_of(result.tenants.begin(), result.tenants.end(), ran_through);
  for (const TenantResult& tenant : result.tenants) {
    if (!ran_through(tenant)) {
      line.verdict = why_not(result, tenant);
      break;
    }
  }
  const TenantResult& advised = result.tenants.front();
  line.peak_allocated = advised.peak_allocated;
  line.peak_reserved = advised.peak_reserved;
  line.allocator_time = advised.allocator_time;
  line.peak_device = result.peak_device;
  line.headroom = result.device.capacity - std::min(result.device.capacity, result.peak_device);
  return line;
}

// Whether the process a search decides runs through with `values`.
bool searched_runs(const Plan& plan, std::size_t which, const Values& values, const DeviceSpec& device,
                   TraceCache& traces) {
  const Plan::Search& s = plan.searches[which];
  const AdviseCandidate candidate = plan.at(values);
  if (s.alone) return ran_through(replay_alone(candidate, s.tenant, device, traces).tenants.front());
  return ran_through(replay(candidate, device, traces).tenants.at(s.tenant));
}

// The value search `which` settles on, the others at their generous ends: bisection over
// [low, high] for the boundary of where the searched process runs through; the generous end
// when even it does not.
std::int64_t search(const Plan& plan, std::size_t which, const DeviceSpec& device, TraceCache& traces) {
  const Plan::Search& s = plan.searches[which];
  Values values = plan.generous();
  const auto fits = [&](std::int64_t value) {
    values[which] = value;
    return searched_runs(plan, which, values, device, traces);
  };
  std::int64_t good = s.smallest ? s.high : s.low;  // fits, or the answer when nothing does
  if (!fits(good)) return good;
  std::int64_t bad = s.smallest ? s.low - 1 : s.high + 1;  // known (or taken) not to fit
  while (good - bad > 1 || bad - good > 1) {
    const std::int64_t middle = bad + (good - bad) / 2;
    (fits(middle) ? good : bad) = middle;
  }
  return good;
}

std::string tenants_text(const std::vector<TenantChoice>& tenants) {
  std::string text;
  for (const TenantChoice& tenant : tenants) text += (text.empty() ? "" : " ") + to_string(tenant);
  return text;
}

using Row = AdviseRow;
MetricValue text(std::string value) { return value; }

// In the CSV's order; the terminal's table shows those in_table, in kTableOrder's order
// (where it puts `what` last, with the change and the run under it).
const std::array<Column<Row>, 20> kColumns{{
    {.name = "rank", .unit = Unit::count, .help = "1 for the best line; empty for the program as it is",
     .get = [](const Row& r) -> MetricValue {
       if (r.rank == 0) return {};
       return std::uint64_t{r.rank};
     }},
    {.name = "fits", .unit = Unit::text, .help = "yes: every tenant ran its whole trace",
     .get = [](const Row& r) { return text(r.line->fits ? "yes" : "no"); }, .in_table = false},
    {.name = "group", .unit = Unit::text,
     .help = "keeps_training (the same model, numerics and global batch) or changes_training",
     .get = [](const Row& r) { return text(std::string(name_of(group_of(r.line->candidate.impact)))); },
     .in_table = false},
    {.name = "impact", .unit = Unit::text,
     .help = "what the change asks: none, setting, implementation, loop, sharding, offload, precision, optimizer, "
             "adapters, quantized, batch, inference",
     .get = [](const Row& r) { return text(std::string(name_of(r.line->candidate.impact))); }, .in_table = false},
    {.name = "changes", .unit = Unit::count,
     .help = "how many changes the line makes: 0 (as it is), 1, or 2 when no single one fits",
     .get = [](const Row& r) -> MetricValue { return static_cast<std::uint64_t>(r.line->candidate.changes); },
     .in_table = false},
    {.name = "what", .unit = Unit::text, .help = "the change in a few words",
     .get = [](const Row& r) { return text(r.line->candidate.what); }, .label = "what changes"},
    {.name = "change", .unit = Unit::text, .help = "exactly what the user changes (the terminal: under `what`)",
     .get = [](const Row& r) { return text(r.line->candidate.change); }, .in_table = false},
    {.name = "workload", .unit = Unit::text, .help = "the advised tenant's workload spec, as run",
     .get = [](const Row& r) { return text(r.line->candidate.workload.text); }, .in_table = false},
    {.name = "policy", .unit = Unit::text, .help = "its policy spec, as run",
     .get = [](const Row& r) { return text(r.line->candidate.policy.text); }, .in_table = false},
    {.name = "tenants", .unit = Unit::text,
     .help = "the other tenants as run, WORKLOAD@POLICY[@start=TIME] separated by spaces",
     .get = [](const Row& r) { return text(tenants_text(r.line->candidate.tenants)); }, .in_table = false},
    {.name = "device", .unit = Unit::text, .help = "the device preset or 'sim'",
     .get = [](const Row& r) { return text(r.results->device.name); }, .in_table = false},
    {.name = "capacity_bytes", .unit = Unit::bytes, .help = "device memory in total",
     .get = [](const Row& r) -> MetricValue { return r.results->device.capacity; }, .in_table = false},
    {.name = "effective_batch", .unit = Unit::count, .help = "batch x accumulation steps; empty for a trace",
     .get = [](const Row& r) -> MetricValue {
       if (r.line->candidate.effective_batch == 0) return {};
       return static_cast<std::uint64_t>(r.line->candidate.effective_batch);
     },
     .label = "eff. batch"},
    {.name = "peak_allocated_bytes", .unit = Unit::bytes, .help = "the advised tenant's",
     .get = [](const Row& r) -> MetricValue { return r.line->peak_allocated; }, .label = "peak allocated"},
    {.name = "peak_reserved_bytes", .unit = Unit::bytes, .help = "the advised tenant's",
     .get = [](const Row& r) -> MetricValue { return r.line->peak_reserved; }, .label = "peak reserved"},
    {.name = "peak_device_bytes", .unit = Unit::bytes, .help = "the device at its fullest, every tenant and context",
     .get = [](const Row& r) -> MetricValue { return r.line->peak_device; }, .in_table = false},
    {.name = "headroom_bytes", .unit = Unit::bytes, .help = "capacity - peak_device_bytes",
     .get = [](const Row& r) -> MetricValue { return r.line->headroom; }, .label = "headroom"},
    {.name = "allocator_time_ns", .unit = Unit::nanos, .help = "the advised tenant's simulated allocator time",
     .get = [](const Row& r) -> MetricValue { return std::uint64_t{r.line->allocator_time}; },
     .label = "allocator time"},
    {.name = "framework", .unit = Unit::text, .help = "whose settings the changes spell: tf or torch",
     .get = [](const Row& r) { return text(std::string(framework_word(r.results->framework))); }, .in_table = false},
    {.name = "verdict", .unit = Unit::text, .help = "why it does not fit; empty when it fits",
     .get = [](const Row& r) { return text(r.line->verdict); }, .in_table = false},
}};

constexpr std::array<std::string_view, 7> kTableOrder{"rank",           "peak_allocated_bytes", "peak_reserved_bytes",
                                                      "headroom_bytes", "allocator_time_ns",    "effective_batch",
                                                      "what"};

}  // namespace

std::string_view name_of(Impact impact) {
  switch (impact) {
    case Impact::none: return "none";
    case Impact::setting: return "setting";
    case Impact::implementation: return "implementation";
    case Impact::loop: return "loop";
    case Impact::sharding: return "sharding";
    case Impact::offload: return "offload";
    case Impact::precision: return "precision";
    case Impact::optimizer: return "optimizer";
    case Impact::adapters: return "adapters";
    case Impact::quantized: return "quantized";
    case Impact::batch: return "batch";
    case Impact::inference: return "inference";
  }
  return "";
}

Group group_of(Impact impact) { return impact < Impact::precision ? Group::keeps_training : Group::changes_training; }

std::string_view name_of(Group group) {
  return group == Group::keeps_training ? "keeps_training" : "changes_training";
}

void rank_lines(std::vector<AdviseLine>& lines) {
  std::stable_sort(lines.begin(), lines.end(), [](const AdviseLine& a, const AdviseLine& b) {
    const Impact ia = a.candidate.impact;
    const Impact ib = b.candidate.impact;
    return std::make_tuple(!a.fits, group_of(ia), ia, b.headroom, a.candidate.what) <
           std::make_tuple(!b.fits, group_of(ib), ib, a.headroom, b.candidate.what);
  });
}

namespace {

// Lines in plan order, and for a plan whose workload the zoo parses but does not lower (a
// combination of tokens it does not model: sharding with DDP) the error in its place.
struct Ran {
  std::vector<AdviseLine> lines;
  std::vector<std::string> errors;  // empty where the plan ran
};

// Every plan searched (where it has a search) and run, among the threads.
Ran run_plans(const std::vector<Plan>& plans, const AdviseStudy& study, TraceCache& traces) {
  Ran ran{std::vector<AdviseLine>(plans.size()), std::vector<std::string>(plans.size())};
  std::vector<AdviseLine>& lines = ran.lines;
  parallel_for(plans.size(), study.threads, [&](std::size_t i) {
    const Plan& plan = plans[i];
    AdviseCandidate candidate;
    RunResult result;
    Values values;
    try {
      for (std::size_t s = 0; s < plan.searches.size(); ++s) values.push_back(search(plan, s, study.device, traces));
      candidate = plan.at(values);
      result = replay(candidate, study.device, traces);
    } catch (const Error& error) {
      lines[i].candidate = plan.at(plan.generous());
      ran.errors[i] = error.what();
      return;
    }
    lines[i] = line_of(std::move(candidate), result);
    std::string end;  // which end of its search each value is, after the setting's name
    if (plan.searches.size() == 1 && !plan.searches.front().alone) {
      const Plan::Search& s = plan.searches.front();
      if (!ran_through(result.tenants.at(s.tenant))) {
        end = s.smallest ? ", even the largest" : ", even the smallest";
      } else {
        end = std::string(s.smallest ? ", the smallest " : ", the largest ") +
              (lines[i].fits ? "that fits" : "with which its tenant runs");
      }
    } else if (!plan.searches.empty()) {
      bool all_run = true;
      for (std::size_t s = 0; s < plan.searches.size(); ++s) {
        all_run = all_run && searched_runs(plan, s, values, study.device, traces);
      }
      end = all_run ? ", each the smallest with which its process runs alone"
                    : ", each the smallest with which its process runs alone (one does not, even at the largest)";
    }
    std::string& what = lines[i].candidate.what;
    what.insert(std::min(what.find(" + "), what.size()), end);
  });
  return ran;
}

}  // namespace

AdviseResults run_advise(const AdviseStudy& study) {
  if (study.ranks < 1) {
    throw Error("advise: --ranks " + std::to_string(study.ranks) + " is below 1: give the GPUs the job runs on");
  }
  const Subject subject = subject_of(study);
  AdviseResults results;
  results.device = study.device;
  results.framework = subject.framework;
  results.workload = subject.workload.text;
  results.training = !subject.model || subject.model->options.training;
  Planner planner(study, subject);  // the plans read it while they run
  TraceCache traces;
  Ran singles = run_plans(planner.plans(results.not_tried), study, traces);
  if (!singles.errors.front().empty()) throw Error(singles.errors.front());  // the program as it is
  std::vector<AdviseLine> lines;
  std::vector<bool> fits;
  for (std::size_t i = 0; i < singles.lines.size(); ++i) {
    AdviseLine& line = singles.lines[i];
    fits.push_back(line.fits);
    if (i == 0) continue;
    if (singles.errors[i].empty()) {
      lines.push_back(std::move(line));
    } else {
      results.not_tried.push_back({line.candidate.what, "not modelled: " + singles.errors[i]});
    }
  }
  results.as_is = std::move(singles.lines.front());
  // Pairs when no single change that keeps the training fits: two that keep it rank above one
  // that changes it.
  const auto keeps_training = [](const AdviseLine& l) {
    return l.fits && group_of(l.candidate.impact) == Group::keeps_training;
  };
  if (!results.as_is.fits && std::none_of(lines.begin(), lines.end(), keeps_training)) {
    results.pairs_tried = true;
    Ran pairs = run_plans(planner.pairs(fits), study, traces);
    for (std::size_t i = 0; i < pairs.lines.size(); ++i) {
      if (pairs.errors[i].empty()) lines.push_back(std::move(pairs.lines[i]));  // a pair the zoo does not model: none
    }
  }
  results.lines = std::move(lines);
  rank_lines(results.lines);
  return results;
}

std::span<const Column<AdviseRow>> advise_columns() { return kColumns; }

std::vector<Column<AdviseRow>> advise_table_columns() { return table_columns<AdviseRow>(kColumns, kTableOrder); }

std::vector<AdviseRow> advise_rows(const AdviseResults& results) {
  std::vector<AdviseRow> rows{{&results, &results.as_is, 0}};
  for (std::size_t i = 0; i < results.lines.size(); ++i) rows.push_back({&results, &results.lines[i], i + 1});
  return rows;
}

std::vector<std::string_view> advise_column_names() {
  std::vector<std::string_view> names;
  for (const Column<Row>& column : kColumns) names.push_back(column.name);
  return names;
}

StudyTable advise_table(const AdviseResults& results) {
  StudyTable table;
  for (const Column<Row>& column : kColumns) table.columns.emplace_back(column.name);
  for (const AdviseRow& row : advise_rows(results)) table.rows.push_back(table_cells<Row>(kColumns, row));
  return table;
}

void write_advise_csv(std::ostream& out, const AdviseResults& results) {
  write_csv_columns<Row>(out, kColumns, advise_rows(results));
}

AdviseStudy advise_study(const AdviseOptions& o, std::ostream& warnings) {
  if (o.workload.empty()) throw Error("advise needs --workload (see advise --help)");
  AdviseStudy study;
  study.workload = parse_workload_spec(o.workload, o.given_workloads);
  if (o.framework == "tf") {
    study.framework = Framework::tf;
  } else if (o.framework == "torch") {
    study.framework = Framework::torch;
  } else if (!o.framework.empty()) {
    throw Error("--framework " + o.framework + " is not tf or torch");
  }
  study.policy = policy_or_alloc_conf(o.policy, o.alloc_conf, warnings);
  for (const std::string& tenant : o.tenants) study.tenants.push_back(parse_tenant(tenant));
  study.ranks = o.ranks;
  study.device = chosen_device(o.device);
  study.threads = thread_count(o.threads);
  return study;
}

}  // namespace allocsim
