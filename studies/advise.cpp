#include "studies/advise.hpp"

#include <algorithm>
#include <array>
#include <cstdio>
#include <functional>
#include <memory>
#include <tuple>

#include "policies/registry.hpp"
#include "sim/csv_columns.hpp"
#include "sim/engine.hpp"
#include "sim/error.hpp"
#include "sim/spec.hpp"
#include "studies/outcome.hpp"
#include "studies/parallel.hpp"
#include "studies/sweep_run.hpp"
#include "workloads/model/model_spec.hpp"

namespace allocsim {
namespace {

// The advised program: its workload as run, and the framework that runs it.
struct Subject {
  std::optional<ModelSpec> model;  // none: a trace
  std::string workload;
  Framework framework;
};

std::string_view framework_word(Framework framework) { return framework == Framework::tf ? "tf" : "torch"; }

Subject subject_of(const AdviseStudy& study) {
  std::optional<ModelSpec> model = parse_model_spec(study.workload);
  if (!model) {
    if (!study.framework) {
      throw Error("advise: workload " + study.workload +
                  " is not a model; say which framework runs it with --framework tf or --framework torch");
    }
    return {std::nullopt, study.workload, *study.framework};
  }
  if (study.framework && *study.framework != model->options.framework) {
    if (model->names(ModelKey::framework)) {
      throw Error("advise: workload " + study.workload + " names " +
                  std::string(framework_word(model->options.framework)) + ", but --framework says " +
                  std::string(framework_word(*study.framework)));
    }
    set_model_token(*model, model_token(framework_word(*study.framework)), 0, study.workload);
  }
  return {model, to_string(*model), model->options.framework};
}

// The framework's own allocator, as it runs when nothing is set.
std::string default_policy(Framework framework) { return framework == Framework::tf ? "bfc" : "caching"; }

// `policy` with `key` set to `value` (replaced where the spec has it).
std::string with_arg(const std::string& policy, const std::string& key, const std::string& value) {
  Spec spec = parse_spec(policy);
  const auto found = std::find_if(spec.args.begin(), spec.args.end(), [&](const auto& arg) { return arg.first == key; });
  if (found != spec.args.end()) {
    found->second = value;
  } else {
    spec.args.emplace_back(key, value);
  }
  return to_string(spec);
}

std::string renamed(const std::string& policy, const std::string& name) {
  Spec spec = parse_spec(policy);
  spec.name = name;
  return to_string(spec);
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

// Which framework's settings a co-tenant's policy takes, from its registry name.
std::optional<Framework> framework_of_policy(const std::string& policy) {
  const std::string_view name = find_policy(parse_spec(policy).name).name;
  if (name == "bfc" || name == "growth") return Framework::tf;
  if (name == "caching" || name == "expandable") return Framework::torch;
  return std::nullopt;
}

// A candidate to run: fixed, or the value of one setting searched by bisection.
struct Plan {
  std::function<AdviseCandidate(std::int64_t value)> at;
  struct Search {
    std::int64_t low;
    std::int64_t high;
    bool smallest;       // the smallest value that fits (a limit), else the largest (a reserve)
    std::size_t tenant;  // whose fitting the value decides
  };
  std::optional<Search> search;
};

class Planner {
 public:
  Planner(const AdviseStudy& study, const Subject& subject) : study_(study), subject_(subject) {}

  std::vector<Plan> plans(std::vector<AdviseNote>& notes) {
    add(make_candidate("as it is", "nothing: " + std::string(subject_.framework == Framework::tf
                                                         ? "TensorFlow's default allocator (BFC, preallocating)"
                                                         : "PyTorch's default caching allocator"),
              Impact::none, subject_.workload, base_policy()));
    if (subject_.framework == Framework::tf) {
      tf_settings();
    } else {
      torch_settings();
    }
    for (std::size_t tenant = 1; tenant <= study_.tenants.size(); ++tenant) other_tenant(tenant);
    if (subject_.model) model_changes(notes);
    return std::move(plans_);
  }

 private:
  std::string base_policy() const { return default_policy(subject_.framework); }
  bool tf() const { return subject_.framework == Framework::tf; }

  std::int64_t effective_batch(const std::string& workload) const {
    const std::optional<ModelSpec> model = parse_model_spec(workload);
    return model ? model->options.batch * model->options.accumulation : 0;
  }

  AdviseCandidate make_candidate(std::string what, std::string change, Impact impact, std::string workload,
                                 std::string policy) const {
    AdviseCandidate candidate{std::move(what), std::move(change), impact, std::move(workload), std::move(policy),
                              study_.tenants, 0};
    candidate.effective_batch = effective_batch(candidate.workload);
    return candidate;
  }

  void add(AdviseCandidate candidate) {
    plans_.push_back(Plan{[candidate](std::int64_t) { return candidate; }, std::nullopt});
  }

  void add_search(std::function<AdviseCandidate(std::int64_t)> at, Plan::Search search) {
    plans_.push_back(Plan{std::move(at), search});
  }

  std::int64_t capacity_mib() const { return static_cast<std::int64_t>(study_.device.capacity / 1_MiB); }

  void tf_settings() {
    add(make_candidate("memory growth", std::string(kGrowthCall) + " before the first tensor", Impact::setting,
              subject_.workload, "growth"));
    add_search(
        [this](std::int64_t mib) {
          return make_candidate("memory_limit", memory_limit_call(mib), Impact::setting,
                       subject_.workload, with_arg(base_policy(), "limit", mib_value(mib)));
        },
        {1, capacity_mib(), true, 0});
    const DeviceSpec& device = study_.device;
    const std::int64_t usable_mib =
        static_cast<std::int64_t>((device.capacity - std::min(device.capacity, device.context_overhead)) / 1_MiB);
    add_search(
        [this](std::int64_t mib) {
          return make_candidate("system reserve",
                       "TF_DEVICE_MIN_SYS_MEMORY_IN_MB=" + std::to_string(mib) + " in the environment before TensorFlow starts",
                       Impact::setting, subject_.workload, with_arg(base_policy(), "reserve", mib_value(mib)));
        },
        {0, std::max<std::int64_t>(0, usable_mib - 1), false, 0});
  }

  void torch_settings() {
    add(make_candidate("expandable segments", "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True", Impact::setting,
              subject_.workload, "expandable"));
    add(make_candidate("max_split_size", "PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:128", Impact::setting, subject_.workload,
              with_arg(base_policy(), "max_split_size", "128MiB")));
    add(make_candidate("garbage collection",
              "PYTORCH_CUDA_ALLOC_CONF=garbage_collection_threshold:0.8 with "
              "torch.cuda.set_per_process_memory_fraction(1.0) (the threshold is a share of that cap)",
              Impact::setting, subject_.workload,
              with_arg(with_arg(base_policy(), "fraction", "1"), "gc_threshold", "0.8")));
    add_search(
        [this](std::int64_t percent) {
          return make_candidate("memory fraction",
                       "torch.cuda.set_per_process_memory_fraction(" + hundredths(percent) + ")", Impact::setting,
                       subject_.workload, with_arg(base_policy(), "fraction", hundredths(percent)));
        },
        {1, 100, true, 0});
  }

  // The other process's own limit: "a second process on a 16 GB card".
  void other_tenant(std::size_t tenant) {
    const TenantChoice& given = study_.tenants[tenant - 1];
    const std::optional<Framework> framework = framework_of_policy(given.policy);
    if (!framework) return;
    const std::string in = "in tenant " + std::to_string(tenant) + " (" + given.workload + "): ";
    const auto changed = [this, tenant](std::string what, std::string change, std::string policy) {
      AdviseCandidate candidate =
          make_candidate(std::move(what), std::move(change), Impact::setting, subject_.workload, base_policy());
      candidate.tenants[tenant - 1].policy = std::move(policy);
      return candidate;
    };
    if (*framework == Framework::tf) {
      if (find_policy(parse_spec(given.policy).name).name == "bfc") {
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

  // The advised model with one token changed, under the framework's default allocator.
  void model_change(std::string what, std::string change, Impact impact,
                    const std::function<void(ModelSpec&)>& edit) {
    ModelSpec spec = *subject_.model;
    edit(spec);
    add(make_candidate(std::move(what), std::move(change), impact, to_string(spec), base_policy()));
  }

  void set(ModelSpec& spec, std::string_view word, std::int64_t value = 0) const {
    set_model_token(spec, model_token(word), value, subject_.workload);
  }

  void model_changes(std::vector<AdviseNote>& notes) {
    const ModelSpec& model = *subject_.model;
    const LoweringOptions& o = model.options;
    const bool training = o.training;
    if (o.precision == Precision::fp32) {
      model_change("amp (fp16 autocast)",
                   tf() ? "tf.keras.mixed_precision.set_global_policy('mixed_float16')"
                        : std::string("torch.autocast(device_type='cuda', dtype=torch.float16) around the forward pass") +
                              (training ? ", with torch.amp.GradScaler('cuda') for backward" : ""),
                   Impact::precision, [&](ModelSpec& s) { set(s, "amp"); });
      if (study_.device.compute_capability >= 80) {
        model_change("bf16 autocast",
                     tf() ? "tf.keras.mixed_precision.set_global_policy('mixed_bfloat16')"
                          : "torch.autocast(device_type='cuda', dtype=torch.bfloat16) around the forward pass",
                     Impact::precision, [&](ModelSpec& s) { set(s, "bf16"); });
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
                   Impact::batch, [&](ModelSpec& s) { set(s, "b", batch / 2); });
    }
    for (const int steps : {2, 4}) {
      if (!training || batch % steps != 0) continue;
      const std::int64_t micro = batch / steps;
      model_change("batch " + std::to_string(micro) + " x " + std::to_string(steps * o.accumulation) +
                       " accumulation steps",
                   "batch " + std::to_string(micro) + ", gradients summed over " + std::to_string(steps * o.accumulation) +
                       " micro-batches before each " + step + ": the effective batch stays " + std::to_string(effective),
                   Impact::loop, [&](ModelSpec& s) {
                     set(s, "b", micro);
                     set(s, "acc", steps * o.accumulation);
                   });
    }
    if (training) {
      model_change("inference only",
                   tf() ? "model(x, training=False) outside tf.GradientTape, or model.predict(x)"
                        : "model.eval() and torch.no_grad()",
                   Impact::inference, [&](ModelSpec& s) { set(s, "infer"); });
      if (o.optimizer == Optimizer::adam || o.optimizer == Optimizer::adamw) {
        const std::string adam = o.optimizer == Optimizer::adam ? "Adam" : "AdamW";
        model_change("SGD with momentum instead of " + adam,
                     (tf() ? "tf.keras.optimizers.SGD(learning_rate=..., momentum=0.9) instead of "
                           : "torch.optim.SGD(model.parameters(), lr=..., momentum=0.9) instead of ") + adam,
                     Impact::optimizer, [&](ModelSpec& s) { set(s, "momentum"); });
      } else if (o.optimizer == Optimizer::momentum) {
        model_change("SGD without momentum",
                     tf() ? "tf.keras.optimizers.SGD(learning_rate=...) without momentum: no momentum slots"
                          : "torch.optim.SGD(model.parameters(), lr=...) without momentum: no momentum buffers",
                     Impact::optimizer, [&](ModelSpec& s) { set(s, "sgd"); });
      }
      checkpointing(notes);
    }
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
      set_model_token(spec, *ckpt, ckpt->numbered ? 1 : 0, subject_.workload);
    } catch (const Error& error) {
      notes.push_back({what + " (" + api + ")", "not modelled for " + model_name + ": " + error.what()});
      return;
    }
    add(make_candidate(what, api + " around each block: activations recomputed in backward", Impact::loop, to_string(spec),
              base_policy()));
  }

  const AdviseStudy& study_;
  const Subject& subject_;
  std::vector<Plan> plans_;
};

// One scenario, built and replayed the way `allocsim run` does: the advised tenant first,
// then the others in the order given.
RunResult replay(const AdviseCandidate& candidate, const DeviceSpec& device, TraceCache& traces) {
  Scenario scenario;
  scenario.device = device;
  scenario.tenants.push_back(TenantSpec{traces.get(candidate.workload), candidate.policy, 0});
  for (const TenantChoice& tenant : candidate.tenants) {
    scenario.tenants.push_back(TenantSpec{traces.get(tenant.workload), tenant.policy, 0});
  }
  return run(scenario, make_policy);
}

AdviseLine line_of(AdviseCandidate candidate, const RunResult& result) {
  AdviseLine line;
  line.candidate = std::move(candidate);
  line.fits = std::all_of(result.tenants.begin(), result.tenants.end(), ran_through);
  for (const TenantResult& tenant : result.tenants) {
    if (!ran_through(tenant)) {
      line.verdict = why_not(tenant);
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

// The value a search settles on: bisection over [low, high] for the boundary of where the
// searched tenant runs through; the generous end when even it does not.
std::int64_t search(const Plan& plan, const DeviceSpec& device, TraceCache& traces) {
  const Plan::Search& s = *plan.search;
  const auto fits = [&](std::int64_t value) {
    return ran_through(replay(plan.at(value), device, traces).tenants.at(s.tenant));
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
  for (const TenantChoice& tenant : tenants) text += (text.empty() ? "" : " ") + tenant.workload + "@" + tenant.policy;
  return text;
}

struct CsvRow {
  const AdviseResults* results;
  const AdviseLine* line;
  std::size_t rank;  // 0 for the program as it is
};

MetricValue text(std::string value) { return value; }

const std::array<Column<CsvRow>, 18> kColumns{{
    {"rank", Unit::count, "1 for the best line; empty for the program as it is",
     [](const CsvRow& r) -> MetricValue {
       if (r.rank == 0) return {};
       return std::uint64_t{r.rank};
     }},
    {"fits", Unit::text, "yes: every tenant ran its whole trace",
     [](const CsvRow& r) { return text(r.line->fits ? "yes" : "no"); }},
    {"impact", Unit::text, "what the change asks: none, setting, loop, precision, optimizer, batch, inference",
     [](const CsvRow& r) { return text(std::string(name_of(r.line->candidate.impact))); }},
    {"what", Unit::text, "the change in a few words", [](const CsvRow& r) { return text(r.line->candidate.what); }},
    {"change", Unit::text, "exactly what the user changes", [](const CsvRow& r) { return text(r.line->candidate.change); }},
    {"workload", Unit::text, "the advised tenant's workload spec, as run",
     [](const CsvRow& r) { return text(r.line->candidate.workload); }},
    {"policy", Unit::text, "its policy spec, as run", [](const CsvRow& r) { return text(r.line->candidate.policy); }},
    {"tenants", Unit::text, "the other tenants as run, WORKLOAD@POLICY separated by spaces",
     [](const CsvRow& r) { return text(tenants_text(r.line->candidate.tenants)); }},
    {"device", Unit::text, "the device preset or 'sim'", [](const CsvRow& r) { return text(r.results->device.name); }},
    {"capacity_bytes", Unit::bytes, "device memory in total",
     [](const CsvRow& r) -> MetricValue { return r.results->device.capacity; }},
    {"effective_batch", Unit::count, "batch x accumulation steps; empty for a trace",
     [](const CsvRow& r) -> MetricValue {
       if (r.line->candidate.effective_batch == 0) return {};
       return static_cast<std::uint64_t>(r.line->candidate.effective_batch);
     }},
    {"peak_allocated_bytes", Unit::bytes, "the advised tenant's",
     [](const CsvRow& r) -> MetricValue { return r.line->peak_allocated; }},
    {"peak_reserved_bytes", Unit::bytes, "the advised tenant's",
     [](const CsvRow& r) -> MetricValue { return r.line->peak_reserved; }},
    {"peak_device_bytes", Unit::bytes, "the device at its fullest, every tenant and context",
     [](const CsvRow& r) -> MetricValue { return r.line->peak_device; }},
    {"headroom_bytes", Unit::bytes, "capacity - peak_device_bytes",
     [](const CsvRow& r) -> MetricValue { return r.line->headroom; }},
    {"allocator_time_ns", Unit::nanos, "the advised tenant's simulated allocator time",
     [](const CsvRow& r) -> MetricValue { return std::uint64_t{r.line->allocator_time}; }},
    {"framework", Unit::text, "whose settings the changes spell: tf or torch",
     [](const CsvRow& r) { return text(std::string(framework_word(r.results->framework))); }},
    {"verdict", Unit::text, "why it does not fit; empty when it fits", [](const CsvRow& r) { return text(r.line->verdict); }},
}};

}  // namespace

std::string_view name_of(Impact impact) {
  switch (impact) {
    case Impact::none: return "none";
    case Impact::setting: return "setting";
    case Impact::loop: return "loop";
    case Impact::precision: return "precision";
    case Impact::optimizer: return "optimizer";
    case Impact::batch: return "batch";
    case Impact::inference: return "inference";
  }
  return "";
}

void rank_lines(std::vector<AdviseLine>& lines) {
  std::stable_sort(lines.begin(), lines.end(), [](const AdviseLine& a, const AdviseLine& b) {
    return std::make_tuple(!a.fits, a.candidate.impact, b.headroom, a.candidate.what) <
           std::make_tuple(!b.fits, b.candidate.impact, a.headroom, b.candidate.what);
  });
}

AdviseResults run_advise(const AdviseStudy& study) {
  const Subject subject = subject_of(study);
  AdviseResults results;
  results.device = study.device;
  results.framework = subject.framework;
  results.workload = subject.workload;
  Planner planner(study, subject);  // the plans read it while they run
  const std::vector<Plan> plans = planner.plans(results.not_tried);

  std::vector<AdviseLine> lines(plans.size());
  TraceCache traces;
  parallel_for(plans.size(), study.threads, [&](std::size_t i) {
    const Plan& plan = plans[i];
    AdviseCandidate candidate = plan.at(plan.search ? search(plan, study.device, traces) : 0);
    const RunResult result = replay(candidate, study.device, traces);
    lines[i] = line_of(std::move(candidate), result);
    if (plan.search) {  // say which end of the search the value is
      const bool smallest = plan.search->smallest;
      std::string& what = lines[i].candidate.what;
      if (!ran_through(result.tenants.at(plan.search->tenant))) {
        what += smallest ? ", even the largest" : ", even the smallest";
      } else {
        what += std::string(smallest ? ", the smallest " : ", the largest ") +
                (lines[i].fits ? "that fits" : "with which its tenant runs");
      }
    }
  });
  results.as_is = std::move(lines.front());
  results.lines.assign(std::make_move_iterator(lines.begin() + 1), std::make_move_iterator(lines.end()));
  rank_lines(results.lines);
  return results;
}

void write_advise_csv(std::ostream& out, const AdviseResults& results) {
  std::vector<CsvRow> rows{{&results, &results.as_is, 0}};
  for (std::size_t i = 0; i < results.lines.size(); ++i) rows.push_back({&results, &results.lines[i], i + 1});
  write_csv_columns<CsvRow>(out, kColumns, rows);
}

}  // namespace allocsim
