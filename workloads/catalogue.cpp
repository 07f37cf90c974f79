#include "workloads/catalogue.hpp"

#include <array>
#include <string>

#include "sim/error.hpp"
#include "workloads/csv_trace.hpp"
#include "workloads/frag_trace.hpp"
#include "workloads/model/model_spec.hpp"
#include "workloads/random_trace.hpp"
#include "workloads/snapshot_import.hpp"

namespace allocsim {
namespace {

Trace make_random(const Params& params, std::string_view spec) {
  return make_random_trace(random_trace_options(params), std::string(spec));
}

const std::array kWorkloads{
    WorkloadInfo{"random", "seeded random requests around a target of live bytes, to exercise policies at scale",
                 kRandomTraceParams, "random:n=100000,seed=7,live=2GiB", make_random},
    WorkloadInfo{"frag", "traces that cut free memory into holes: the seed article's case, alternating, sawtooth, "
                 "padded vs bucketed sequences",
                 kFragTraceParams, "frag:pattern=seed",
                 [](const Params& params, std::string_view spec) { return make_frag_trace(params, std::string(spec)); }},
};

bool names_a_file(std::string_view spec) {
  return spec.find('/') != std::string_view::npos || spec.ends_with(".csv");
}

}  // namespace

std::span<const WorkloadInfo> all_workloads() { return kWorkloads; }

Trace load_workload(std::string_view spec_text) {
  if (spec_text.ends_with(".pickle")) return read_torch_snapshot(std::string(spec_text));
  if (names_a_file(spec_text)) return read_csv_trace_file(std::string(spec_text));
  if (const auto model = parse_model_spec(spec_text)) {
    return lower_model(model->build(), model->options, std::string(spec_text));
  }
  const Spec spec = parse_spec(spec_text);
  for (const WorkloadInfo& info : kWorkloads) {
    if (info.name == spec.name) return info.make(Params(spec, info.params, "workload " + spec.name), spec_text);
  }
  std::string valid;
  for (const WorkloadInfo& info : kWorkloads) valid += (valid.empty() ? "" : ", ") + std::string(info.name);
  for (const ZooModel& model : zoo()) valid += ", " + std::string(model.name) + "_bN...";
  throw Error("unknown workload '" + spec.name + "'; valid workloads: " + valid + ", or a path to a .csv trace");
}

}  // namespace allocsim
