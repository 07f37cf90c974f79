#include <atomic>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <sstream>
#include <mutex>
#include <thread>

#include <boost/program_options.hpp>

#include "policies/registry.hpp"
#include "sim/atomic_file.hpp"
#include "app/commands.hpp"
#include "app/device_options.hpp"
#include "studies/maxbatch.hpp"
#include "app/parse_options.hpp"
#include "studies/sweep_grid.hpp"
#include "studies/sweep_run.hpp"
#include "sim/engine.hpp"
#include "sim/error.hpp"
#include "sim/metrics.hpp"
#include "sim/report.hpp"
#include "workloads/model/model_spec.hpp"

namespace allocsim {
namespace {

namespace po = boost::program_options;

constexpr const char* kMaxBatchUsage = R"(allocsim maxbatch: the largest batch of a model workload that runs without OOM, per policy.

Usage:
  allocsim maxbatch --workload MODEL --policy SPECS [--device NAMES | --capacity SIZE] [--csv FILE] [options]

Example:
  allocsim maxbatch --workload resnet50 --policy bfc,growth,caching --device v100-16gb

For each policy: the search doubles the batch to the first OOM, bisects, then tries the
neighbours on each side; an OOM below the answer or a fit above it is reported as "not
monotone". Then the peak and fragmentation at that batch, a least-squares line through the
peaks of every batch that ran (peak allocated = a + b x batch, with its residual), and the
same search with amp and with gradient accumulation (batch per micro-batch x steps).
)";

struct MaxBatchOptions {
  std::string workload;
  std::vector<std::string> policies;
  DeviceChoice device;
  std::string csv;
  std::int64_t limit = 65536;
  int neighbours = 4;
  int accumulation = 4;
  unsigned threads = 0;
};

struct Variant {
  std::string label;                  // "" for the workload as given
  const ModelToken* token = nullptr;  // the token the variant sets, on top of the workload's
  std::int64_t value = 0;             // its number, for a numbered token
  std::int64_t per_step = 1;          // micro-batches per optimizer step

  std::string name() const { return token ? spell(*token, value) : "as given"; }
};

std::string mib(double bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f MiB", bytes / (1024.0 * 1024.0));
  return text;
}

void describe(std::ostream& out, const std::string& policy, const MaxBatch& found, const DeviceSpec& device,
              std::int64_t limit) {
  out << "policy " << policy << ": ";
  if (!found.largest) {
    out << "not even batch 1 fits";
    if (!found.probes.empty()) out << " (" << found.probes.front().failure << ")";
    out << '\n';
    return;
  }
  out << "largest batch " << *found.largest;
  if (found.capped) {
    out << " (the search limit; raise --limit)";
  } else {
    for (const BatchProbe& probe : found.probes) {
      if (probe.batch == *found.largest + 1) out << "; " << probe.batch << " runs out of memory (" << probe.failure << ")";
    }
  }
  out << '\n';
  const BatchProbe& at = *found.at_largest();
  out << "  at batch " << at.batch << ": peak reserved " << format_bytes(at.peak_reserved) << ", peak allocated "
      << format_bytes(at.peak_allocated) << ", fragmentation at peak " << format_human(at.fragmentation, Unit::ratio) << '\n';
  if (const auto fit = fit_peak(found.probes, &BatchProbe::peak_allocated)) {
    out << "  fit over " << fit->points << " batches that ran: peak allocated = " << mib(fit->intercept) << " + "
        << mib(fit->slope) << " x batch, rms residual " << mib(fit->rms_residual);
    const double usable = static_cast<double>(device.capacity - std::min(device.capacity, device.context_overhead));
    if (fit->slope > 0) {
      out << "; the line reaches " << format_bytes(static_cast<Bytes>(usable)) << " at batch "
          << static_cast<std::int64_t>((usable - fit->intercept) / fit->slope);
    }
    out << '\n';
  }
  out << "  " << (found.monotone ? "monotone around the answer" : "NOT monotone: " + found.evidence) << " ("
      << found.probes.size() << " batches tried, up to " << limit << ")\n";
}

}  // namespace

int maxbatch_command(std::span<const std::string> args, std::ostream& out) {
  MaxBatchOptions o;
  po::options_description description("Options");
  description.add_options()
      ("help,h", "this help")
      ("workload,w", po::value(&o.workload)->value_name("MODEL"), "a model workload, e.g. resnet50 or bert_base_s512_adam")
      ("policy,p", po::value(&o.policies)->value_name("SPECS")->composing(), "policy specs, or all (repeatable)")
      ("limit", po::value(&o.limit)->value_name("N"), "the largest batch tried (default 65536)")
      ("neighbours", po::value(&o.neighbours)->value_name("N"), "batches checked on each side of the answer (default 4)")
      ("accumulation", po::value(&o.accumulation)->value_name("N"), "micro-batches per step for the accumulation line (default 4)")
      ("csv", po::value(&o.csv)->value_name("FILE"), "also a CSV row per device, policy and variant (written whole)")
      ("threads,j", po::value(&o.threads)->value_name("N"), "threads (default: every core)");
  add_device_options(description, o.device, DeviceLists::many, false);
  const po::variables_map values = parse_options(args, description);
  if (values.count("help")) {
    out << kMaxBatchUsage << '\n' << description << '\n';
    return 0;
  }
  if (o.workload.empty() || o.policies.empty()) throw Error("maxbatch needs --workload MODEL and --policy (see maxbatch --help)");
  const auto model = parse_model_spec(o.workload);
  if (!model) throw Error("maxbatch: workload " + o.workload + " is not a model workload (see `allocsim workloads`)");
  if (o.limit < 1 || o.limit > 100'000) throw Error("--limit must be 1 to 100000");
  if (o.neighbours < 0 || o.neighbours > 64) throw Error("--neighbours must be 0 to 64");
  if (o.accumulation < 2 || o.accumulation > 1024) throw Error("--accumulation must be 2 to 1024");

  // The policies as a sweep would read them ("all" included), checked up front.
  SweepOptions sweep;
  sweep.workloads = {o.workload};
  sweep.policies = o.policies;
  std::vector<std::string> policies;
  for (const SweepPoint& point : expand_sweep(sweep)) policies.push_back(point.policy);

  const std::vector<DeviceSpec> devices = chosen_devices(o.device);
  check_output_folder(o.csv);

  std::vector<Variant> variants{{}};
  if (model->options.precision == Precision::fp32) variants.push_back({"with amp", &model_token("amp")});
  const ModelToken& acc = model_token("acc");
  variants.push_back({"with " + spell(acc, o.accumulation), &acc, o.accumulation, o.accumulation});

  TraceCache traces;
  const auto search = [&](const DeviceSpec& device, const std::string& policy, const Variant& variant) {
    return find_max_batch(
        [&](std::int64_t batch) {
          ModelSpec spec = *model;
          if (variant.token) set_model_token(spec, *variant.token, variant.value, o.workload);
          set_model_token(spec, model_token("b"), batch, o.workload);
          const std::string workload = to_string(spec);
          Scenario scenario;
          scenario.device = device;
          scenario.tenants.push_back(TenantSpec{traces.get(workload), policy, 0});
          const RunResult result = run(scenario, make_policy);
          const TenantResult& tenant = result.tenants.front();
          BatchProbe probe;
          probe.batch = batch;
          probe.fits = tenant.oom_count == 0 && !tenant.hang_event && tenant.events_replayed == tenant.events;
          probe.peak_requested = tenant.peak_requested;
          probe.peak_allocated = tenant.peak_allocated;
          probe.peak_reserved = tenant.peak_reserved;
          probe.fragmentation = tenant.fragmentation_at_peak();
          if (tenant.hang_event) probe.failure = "the allocator would hang";
          if (const OomRecord* oom = tenant.first_oom()) probe.failure = std::string(name_of(oom->kind));
          return probe;
        },
        o.limit, o.neighbours);
  };

  // Every (policy, variant) search is independent: share them among the threads.
  // Task i: device i / per_device, policy (i % per_device) / variants, variant i % variants.
  const std::size_t per_device = policies.size() * variants.size();
  const std::size_t tasks = devices.size() * per_device;
  std::vector<MaxBatch> found(tasks);
  std::atomic<std::size_t> next{0};
  std::exception_ptr error;
  std::mutex mutex;
  {
    const unsigned threads = o.threads ? o.threads : std::max(1u, std::thread::hardware_concurrency());
    std::vector<std::jthread> workers;
    for (unsigned t = 0; t < std::min<std::size_t>(threads, tasks); ++t) {
      workers.emplace_back([&] {
        for (std::size_t i = next++; i < tasks; i = next++) {
          try {
            found[i] = search(devices[i / per_device], policies[i % per_device / variants.size()], variants[i % variants.size()]);
          } catch (...) {
            const std::lock_guard lock(mutex);
            if (!error) error = std::current_exception();
          }
        }
      });
    }
  }
  if (error) std::rethrow_exception(error);

  std::ostringstream csv;
  csv << "workload,device,capacity_bytes,context_bytes,policy,variant,largest_batch,batch_per_step,capped,monotone,"
         "not_monotone_because,peak_reserved_bytes,peak_allocated_bytes,fragmentation_at_peak,fit_intercept_bytes,"
         "fit_slope_bytes,fit_rms_residual_bytes,batches_tried\n";
  for (std::size_t d = 0; d < devices.size(); ++d) {
    const DeviceSpec& device = devices[d];
    out << (d > 0 ? "\n" : "") << "workload " << o.workload << " on " << device.name << " (" << format_bytes(device.capacity)
        << ", context " << format_bytes(device.context_overhead) << ")\n";
    for (std::size_t p = 0; p < policies.size(); ++p) {
      const std::size_t first = d * per_device + p * variants.size();
      describe(out, policies[p], found[first], device, o.limit);
      for (std::size_t v = 0; v < variants.size(); ++v) {
        const MaxBatch& result = found[first + v];
        const std::int64_t per_step = variants[v].per_step;
        csv << csv_field(o.workload) << ',' << device.name << ',' << device.capacity << ',' << device.context_overhead << ','
            << csv_field(policies[p]) << ',' << variants[v].name() << ',';
        if (result.largest) csv << *result.largest << ',' << *result.largest * per_step;
        else csv << ',';
        csv << ',' << (result.capped ? "yes" : "no") << ',' << (result.monotone ? "yes" : "no") << ','
            << csv_field(result.evidence) << ',';
        if (const BatchProbe* at = result.at_largest()) {
          csv << at->peak_reserved << ',' << at->peak_allocated << ',' << format_plain(at->fragmentation);
        } else {
          csv << ",,";
        }
        if (const auto fit = fit_peak(result.probes, &BatchProbe::peak_allocated)) {
          csv << ',' << format_plain(fit->intercept) << ',' << format_plain(fit->slope) << ','
              << format_plain(fit->rms_residual);
        } else {
          csv << ",,,";
        }
        csv << ',' << result.probes.size() << '\n';
        if (v == 0) continue;
        out << "  " << variants[v].label << ": ";
        if (!result.largest) {
          out << "not even batch 1 fits\n";
          continue;
        }
        out << "largest batch " << *result.largest << (result.capped ? "+" : "");
        if (per_step > 1) out << " per micro-batch, " << *result.largest * per_step << " per optimizer step";
        if (!result.monotone) out << " (not monotone: " << result.evidence << ")";
        out << '\n';
      }
    }
  }
  if (!o.csv.empty()) write_file_atomically(o.csv, [&](std::ostream& file) { file << csv.str(); });
  return 0;
}

}  // namespace allocsim
