// Running a sweep's points and writing them as one tidy CSV: a row per tenant per point,
// the point's parameters first (sweep_columns()), then every metric of the metric table
// except the wall-clock ones (unless asked), then the policies' own statistics. Rows come
// out in point order whatever ran them, so the bytes depend on the inputs only.
#pragma once

#include <cstdint>
#include <functional>
#include <istream>
#include <map>
#include <memory>
#include <mutex>
#include <ostream>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "studies/study_table.hpp"
#include "studies/sweep_grid.hpp"
#include "sim/trace.hpp"
#include "workloads/catalogue.hpp"

namespace allocsim {

struct SweepRow {
  std::size_t point = 0;
  std::vector<std::string> cells;  // the parameter and metric cells
  std::vector<std::pair<std::string, std::string>> extras;  // a policy's statistics: column, value
};

// Loads each workload spec once per device architecture (a model workload's cuBLAS
// workspace depends on it) and shares it between the points and threads that use it.
class TraceCache {
 public:
  std::shared_ptr<const Trace> get(const WorkloadSpec& spec, int compute_capability);

 private:
  struct Entry {
    std::once_flag once;
    std::shared_ptr<const Trace> trace;
  };
  std::mutex mutex_;
  std::map<std::pair<std::string, int>, std::shared_ptr<Entry>> entries_;  // by workload spec and architecture
};

// The header's fixed part: parameter columns, then the metric columns.
std::vector<std::string> sweep_base_columns(bool timing);

// One point: its scenario replayed, a row per tenant.
std::vector<SweepRow> run_sweep_point(const SweepPoint& point, TraceCache& traces, bool timing);

// Runs `todo` (indices into points) on `threads` threads; `tick(done)` is called from the
// calling thread now and then, and once at the end. The first error stops the rest and is rethrown.
// When `stop` says so (asked between points), no further point starts: the rows returned
// are those of the points that finished, each point whole.
std::vector<SweepRow> run_sweep_points(const std::vector<SweepPoint>& points, std::span<const std::size_t> todo,
                                       unsigned threads, bool timing,
                                       const std::function<void(std::size_t done, std::span<const SweepRow> rows)>& tick,
                                       const std::function<bool()>& stop = {});

// The policy statistic columns a sweep will have, known before it runs: each policy is
// built once on an idle device and asked for its statistics' names.
std::vector<std::string> probe_extra_columns(const std::vector<SweepPoint>& points);

// Writes the header and `rows` sorted by point (ties keep their order). Extra columns:
// `extra_columns` first, then any other statistic in order of first appearance.
void write_sweep_csv(std::ostream& out, bool timing, std::vector<std::string> extra_columns, std::vector<SweepRow> rows);

// The table the CSV holds: rows in point order, every extra column filled ("" where a
// policy has no such statistic).
StudyTable sweep_table(bool timing, std::vector<std::string> extra_columns, std::vector<SweepRow> rows);

// A sweep run whole in this process, as the Python package runs one; the command line
// runs the same steps with ranks, --resume and checkpoints around them.
struct SweepStudy {
  SweepOptions grid;
  unsigned threads = 0;  // 0: every core
  bool timing = false;   // add the wall-clock columns
  std::function<bool()> stop;  // asked between points: true starts no other point
};

struct SweepOutcome {
  StudyTable table;
  std::size_t points = 0;    // in the grid
  std::size_t finished = 0;  // points whose rows are in the table (all of them unless stopped)
};

SweepOutcome run_sweep(const SweepStudy& study);

// Rows of a CSV an earlier run of the same sweep wrote, for --resume: only points whose
// rows are all there (one per tenant) and name the same workload and policy as now; a
// cut last line is dropped. Error when the header is not this sweep's.
std::vector<SweepRow> read_sweep_csv(std::istream& in, bool timing, const std::vector<SweepPoint>& points,
                                     const std::string& name);

}  // namespace allocsim
