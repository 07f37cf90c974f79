#include "studies/sweep_run.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <thread>

#include "sim/engine.hpp"
#include "sim/error.hpp"
#include "sim/interrupt.hpp"
#include "sim/metrics.hpp"
#include "sim/report.hpp"
#include "sim/sim_device.hpp"
#include "studies/csv_resume.hpp"
#include "studies/parallel.hpp"
#include "workloads/catalogue.hpp"

namespace allocsim {

std::shared_ptr<const Trace> TraceCache::get(const WorkloadSpec& spec, int compute_capability) {
  std::shared_ptr<Entry> entry;
  {
    const std::lock_guard lock(mutex_);
    std::shared_ptr<Entry>& slot = entries_[{spec.text, compute_capability}];
    if (!slot) slot = std::make_shared<Entry>();
    entry = slot;
  }
  // Other threads wanting the same trace wait here; a failed load is retried by the next.
  std::call_once(entry->once, [&] {
    LoadOptions options;
    options.compute_capability = compute_capability;
    entry->trace = load_shared_workload(spec, options);
  });
  return entry->trace;
}

std::vector<std::string> sweep_base_columns(bool timing) {
  std::vector<std::string> columns = sweep_columns();
  for (const Metric& metric : metrics()) {
    if (timing || !is_wall_clock(metric)) columns.emplace_back(metric.name);
  }
  return columns;
}

std::vector<SweepRow> run_sweep_point(const SweepPoint& point, TraceCache& traces, bool timing) {
  Scenario scenario = point.scenario;
  for (std::size_t i = 0; i < scenario.tenants.size(); ++i) scenario.tenants[i].trace = traces.get(point.workloads[i], scenario.device.compute_capability);
  const RunResult result = run(scenario);
  std::vector<SweepRow> rows;
  for (const TenantResult& tenant : result.tenants) {
    std::vector<std::string> cells = point.leading;
    for (const Metric& metric : metrics()) {
      if (timing || !is_wall_clock(metric)) cells.push_back(format_plain(metric.get(result, tenant)));
    }
    SweepRow row{point.index, std::move(cells), {}};
    for (const PolicyStat& stat : tenant.extra) row.extras.emplace_back(stat.name, std::to_string(stat.value));
    rows.push_back(std::move(row));
  }
  return rows;
}

std::vector<SweepRow> run_sweep_points(const std::vector<SweepPoint>& points, std::span<const std::size_t> todo,
                                       unsigned threads, bool timing,
                                       const std::function<void(std::size_t, std::span<const SweepRow>)>& tick,
                                       const std::function<bool()>& stop) {
  TraceCache traces;
  std::vector<SweepRow> finished;
  std::mutex mutex;  // guards finished
  parallel_for(
      todo.size(), threads,
      [&](std::size_t i) {
        std::vector<SweepRow> rows;
        try {
          rows = run_sweep_point(points.at(todo[i]), traces, timing);
        } catch (const Interrupted&) {
          return;  // a point a signal cut short is one not run; `stop` starts no other
        }
        const std::lock_guard lock(mutex);
        for (SweepRow& row : rows) finished.push_back(std::move(row));
      },
      [&](std::size_t done) {
        const std::lock_guard lock(mutex);
        tick(done, finished);
      },
      stop);
  return finished;
}

std::vector<std::string> probe_extra_columns(const std::vector<SweepPoint>& points) {
  std::vector<std::string> names;
  std::set<std::string> probed;
  for (const SweepPoint& point : points) {
    for (const TenantSpec& tenant : point.scenario.tenants) {
      if (!probed.insert(tenant.policy.text).second) continue;
      SimDevice device(point.scenario.device);
      for (const PolicyStat& stat : tenant.policy.make(device).policy->inspect(Detail::counters).extra) {
        if (std::find(names.begin(), names.end(), stat.name) == names.end()) names.push_back(stat.name);
      }
    }
  }
  return names;
}

StudyTable sweep_table(bool timing, std::vector<std::string> extra_columns, std::vector<SweepRow> rows) {
  std::stable_sort(rows.begin(), rows.end(), [](const SweepRow& a, const SweepRow& b) { return a.point < b.point; });
  for (const SweepRow& row : rows) {
    for (const auto& [name, value] : row.extras) {
      if (std::find(extra_columns.begin(), extra_columns.end(), name) == extra_columns.end()) extra_columns.push_back(name);
    }
  }
  StudyTable table;
  table.columns = sweep_base_columns(timing);
  table.columns.insert(table.columns.end(), extra_columns.begin(), extra_columns.end());
  std::map<std::string, std::string> values;
  for (SweepRow& row : rows) {
    std::vector<std::string> cells = std::move(row.cells);
    values.clear();
    for (auto& [name, value] : row.extras) values.emplace(name, std::move(value));
    for (const std::string& name : extra_columns) {
      const auto found = values.find(name);
      cells.push_back(found == values.end() ? "" : std::move(found->second));
    }
    table.rows.push_back(std::move(cells));
  }
  return table;
}

void write_sweep_csv(std::ostream& out, bool timing, std::vector<std::string> extra_columns, std::vector<SweepRow> rows) {
  write_study_csv(out, sweep_table(timing, std::move(extra_columns), std::move(rows)));
}

SweepOutcome run_sweep(const SweepStudy& study) {
  const std::vector<SweepPoint> points = expand_sweep(study.grid);
  const std::vector<std::string> extras = probe_extra_columns(points);
  std::vector<std::size_t> todo(points.size());
  for (std::size_t i = 0; i < todo.size(); ++i) todo[i] = i;
  const unsigned threads = study.threads != 0 ? study.threads : std::max(1u, std::thread::hardware_concurrency());
  std::vector<SweepRow> rows = run_sweep_points(points, todo, threads, study.timing, [](std::size_t, std::span<const SweepRow>) {}, study.stop);
  std::set<std::size_t> finished;
  for (const SweepRow& row : rows) finished.insert(row.point);
  return SweepOutcome{sweep_table(study.timing, extras, std::move(rows)), points.size(), finished.size()};
}

std::vector<SweepRow> read_sweep_csv(std::istream& in, bool timing, const std::vector<SweepPoint>& points,
                                     const std::string& name) {
  const std::vector<std::string> base = sweep_base_columns(timing);
  std::vector<std::string> header;
  if (!read_resume_header(in, base, true, header,
                          "--resume: " + name + " was not written by this kind of sweep (its header differs" +
                              (timing ? "" : "; was it written with --timing?") + ")")) {
    return {};
  }
  bool complete = false;
  const auto column = [&](std::string_view wanted) {
    return static_cast<std::size_t>(std::find(base.begin(), base.end(), wanted) - base.begin());
  };
  const std::size_t point_at = column("point"), tenant_at = column("tenant"), workload_at = column("workload"),
                    policy_at = column("policy"), device_at = column("device"), capacity_at = column("capacity_bytes");

  std::map<std::size_t, std::vector<SweepRow>> by_point;
  std::map<std::size_t, std::set<std::size_t>> tenants_seen;
  std::vector<std::string> cells;
  std::size_t line = 1;
  while (read_csv_record(in, cells, complete)) {
    ++line;
    if (!complete) break;  // the line the interrupted run was writing
    if (cells.size() != header.size()) throw Error("--resume: " + name + ":" + std::to_string(line) + ": wrong number of cells");
    std::size_t point = 0, tenant = 0;
    try {
      point = std::stoul(cells[point_at]);
      tenant = std::stoul(cells[tenant_at]);
    } catch (const std::exception&) {
      throw Error("--resume: " + name + ":" + std::to_string(line) + ": no point or tenant number");
    }
    const SweepPoint* expected = point < points.size() ? &points[point] : nullptr;
    if (!expected || tenant >= expected->workloads.size() || cells[workload_at] != expected->workloads[tenant].text ||
        cells[policy_at] != expected->scenario.tenants[tenant].policy.text ||
        cells[device_at] != expected->scenario.device.name ||
        cells[capacity_at] != std::to_string(expected->scenario.device.capacity)) {
      throw Error("--resume: " + name + ":" + std::to_string(line) + ": point " + cells[point_at] +
                  " is not the same point in this sweep (were the options changed?)");
    }
    SweepRow row;
    row.point = point;
    row.cells.assign(cells.begin(), cells.begin() + static_cast<std::ptrdiff_t>(base.size()));
    for (std::size_t i = base.size(); i < header.size(); ++i) {
      if (!cells[i].empty()) row.extras.emplace_back(header[i], cells[i]);
    }
    if (tenants_seen[point].insert(tenant).second) by_point[point].push_back(std::move(row));
  }
  std::vector<SweepRow> rows;
  for (auto& [point, point_rows] : by_point) {
    if (point_rows.size() != points[point].workloads.size()) continue;  // a point cut in the middle runs again
    for (SweepRow& row : point_rows) rows.push_back(std::move(row));
  }
  return rows;
}

}  // namespace allocsim
