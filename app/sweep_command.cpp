#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string_view>
#include <thread>

#include <boost/program_options.hpp>

#include "app/alloc_conf_option.hpp"
#include "app/commands.hpp"
#include "app/device_options.hpp"
#include "app/parse_options.hpp"
#include "app/progress.hpp"
#include "app/ranks.hpp"
#include "sim/atomic_file.hpp"
#include "sim/error.hpp"
#include "sim/interrupt.hpp"
#include "sim/output_paths.hpp"
#include "sim/version.hpp"
#include "studies/batch_report.hpp"
#include "studies/csv_resume.hpp"
#include "studies/report_page.hpp"
#include "studies/sweep_grid.hpp"
#include "studies/sweep_run.hpp"
#include "workloads/catalogue.hpp"

namespace allocsim {
namespace {

namespace po = boost::program_options;

constexpr const char* kSweepUsage = R"(allocsim sweep: replay the cross product of list-valued options, one CSV row per tenant per point.

Usage:
  allocsim sweep --workload SPEC [--workload SPEC...] --policy SPECS [list options] [--csv FILE]

Each --workload is one workload spec, its commas its own (llama2_7b_bf16:qlora=64,ckpt is
one); several workloads repeat the option: --workload resnet50 --workload bert_base.
Other lists are comma separated; numbers and sizes also take ranges: a:b doubles from a
to b, a:b:s steps by s (1:1024 is 1,2,4..1024; 1:1024,3:768 adds the midpoints). A policy
spec keeps its own commas: bfc:growth=true,limit=4GiB,caching is two policies. --policy
all is every registered policy. The model options become workload tokens (resnet50 with
--batch 64 --precision amp is resnet50_amp_b64). A model workload replays its warm-up
step and one steady-state step unless --steps (or a stepsN token) says otherwise, so each
point's peak is what a training job reaches from its second iteration on; --steps 1 is the
first step alone. --batch is per micro-batch under --accumulation.

Examples:
  allocsim sweep --workload resnet50 --batch 1:1024 --policy bfc,growth,caching --capacity 16GiB,80GiB --precision fp32,amp --csv sweep.csv
  allocsim sweep --workload random:n=100000 --param seed=1:10:1 --param live=1GiB:8GiB --policy bfc,caching --csv random.csv
  allocsim sweep --workload resnet50 --workload mobilenet_v2 --batch 8:256 --policy caching --device t4 --csv cnn.csv
  allocsim sweep --workload bert_base --sequence 64:512 --batch 8 --policy all --device v100-16gb --csv bert.csv
  mpirun -np 4 allocsim sweep ...   (rank 0 writes the same CSV)

Rows come in point order, the same bytes for any --threads and any number of ranks.
^C (SIGINT) or SIGTERM stops the sweep at once (the points running are dropped): the rows
of every finished point are written to --csv and the same command with --resume runs the rest.
Columns: point, model, batch, sequence, precision, optimizer, accumulation, steps, mode,
on_oom (the point), then every metric column of `allocsim run --csv` except the wall-clock
replay_seconds and events_per_second (--timing adds them back), then policy statistics.
)";

constexpr std::string_view kInternal = "internal error: ";

struct SweepCliOptions {
  SweepOptions sweep;
  std::string alloc_conf;
  std::string csv;
  std::string report;
  int threads = 0;
  double save_every = 2;
  bool resume = false;
  bool timing = false;
  bool quiet = false;
};

po::options_description sweep_options(SweepCliOptions& o) {
  po::options_description description("Options");
  SweepOptions& s = o.sweep;
  description.add_options()
      ("help,h", "this help")
      ("workload,w", po::value(&s.workloads)->value_name("SPEC")->composing(),
       "one workload spec, commas and all; repeat for several workloads")
      ("policy,p", po::value(&s.policies)->value_name("SPECS")->composing(), "policy specs, or all (repeatable)")
      ("tenant,t", po::value(&s.tenants)->value_name("WORKLOAD@POLICY[@start=TIME]")->composing(),
       "another process on the device at every point, with its own CUDA context, started at TIME (repeatable)")
      ("param", po::value(&s.params)->value_name("KEY=LIST")->composing(),
       "an option of a generator workload, swept (repeatable): --param seed=1:8:1 --param live=1GiB:4GiB")
      ("on-oom", po::value(&s.on_oom)->value_name("stop,continue"), "what an OOM does (default stop)")
      ("csv", po::value(&o.csv)->value_name("FILE"), "write the CSV here (written whole, by rename), else to stdout")
      ("report", po::value(&o.report)->value_name("FILE.html"),
       "a self-contained HTML page: peak reserved and allocated against the batch per policy, the device line, "
       "each policy's largest batch; a chart per precision, device or other swept parameter")
      ("threads,j", po::value(&o.threads)->value_name("N"), "threads (default: every core)")
      ("resume", po::bool_switch(&o.resume), "keep the points already in --csv FILE, run only the others")
      ("save-every", po::value(&o.save_every)->value_name("SECONDS"),
       "write the rows finished so far to --csv this often (default 2; 0: after every point)")
      ("timing", po::bool_switch(&o.timing), "add replay_seconds and events_per_second (then no two runs match)")
      ("quiet,q", po::bool_switch(&o.quiet), "no progress bar");
  // The model axes come from the token table; two keep the short names they always had.
  constexpr std::pair<std::string_view, std::string_view> kShort[]{{"batch", ",b"}, {"sequence", ",s"}};
  for (const ModelAxis& axis : model_axes()) {
    std::string name = axis.name;
    for (const auto& [long_name, letter] : kShort) {
      if (long_name == axis.name) name += letter;
    }
    description.add_options()(name.c_str(), po::value(&s.model_axes[axis.name])->value_name(axis.value_name), axis.help.c_str());
  }
  add_alloc_conf_option(description, o.alloc_conf);
  add_device_options(description, s.device, DeviceLists::many, false);
  return description;
}

// What this rank runs: the grid, the rows kept from --resume (rank 0 reads them, every
// rank learns which points are done), and the points left that are this rank's.
struct SweepPlan {
  std::vector<SweepPoint> points;
  std::vector<std::string> extras;  // the policy statistic columns, known before the run
  std::vector<SweepRow> kept;
  std::size_t skipped = 0;
  std::vector<std::size_t> todo;
};

std::vector<SweepRow> read_kept(const SweepCliOptions& options, const std::vector<SweepPoint>& points) {
  std::ifstream in(options.csv, std::ios::binary);
  if (!in) throw Error("--resume: cannot read " + options.csv);
  return read_sweep_csv(in, options.timing, points, options.csv);
}

SweepPlan plan_sweep(const SweepCliOptions& options, Ranks& ranks) {
  SweepPlan plan;
  plan.points = expand_sweep(options.sweep);
  OutputPaths paths;  // the --resume file is the output itself, read first
  for (const SweepPoint& point : plan.points) {
    for (const WorkloadSpec& workload : point.workloads) {
      if (const FileChoice* file = workload.file()) paths.input("--workload", file->path);
    }
  }
  paths.output("--csv", options.csv);
  paths.output("--report", options.report);
  paths.check();
  plan.extras = probe_extra_columns(plan.points);
  std::pair<std::string, std::vector<std::size_t>> done;
  if (ranks.rank() == 0 && options.resume && std::filesystem::exists(options.csv)) {
    try {
      plan.kept = read_kept(options, plan.points);
      for (const SweepRow& row : plan.kept) done.second.push_back(row.point);
    } catch (const Error& error) {
      done.first = error.what();
    }
  }
  done = ranks.broadcast(std::move(done));
  if (!done.first.empty()) throw Error(done.first);
  const std::set<std::size_t> skip(done.second.begin(), done.second.end());
  plan.skipped = skip.size();
  for (const SweepPoint& point : plan.points) {
    if (!skip.contains(point.index) && point.index % static_cast<std::size_t>(ranks.size()) == static_cast<std::size_t>(ranks.rank())) {
      plan.todo.push_back(point.index);
    }
  }
  return plan;
}

// This rank's points on `threads` threads until ^C or a kill; rank 0 gets every rank's
// rows and the first error. One process alone writes its progress to --csv now and then,
// so an interrupted sweep leaves what it finished for --resume.
std::pair<std::string, std::vector<SweepRow>> run_planned(const SweepPlan& plan, const SweepCliOptions& options,
                                                          unsigned threads, Ranks& ranks, std::ostream& err) {
  Progress progress(err, plan.todo.size(), ranks.rank() == 0 && !options.quiet && Progress::stderr_is_terminal());
  const bool checkpoint = ranks.size() == 1 && !options.csv.empty();
  const auto save_every = std::chrono::duration<double>(options.save_every);
  auto last_checkpoint = std::chrono::steady_clock::now();
  const auto save = [&](std::span<const SweepRow> finished) {
    std::vector<SweepRow> rows = plan.kept;
    rows.insert(rows.end(), finished.begin(), finished.end());
    write_file_atomically(options.csv, [&](std::ostream& file) { write_sweep_csv(file, options.timing, plan.extras, rows); });
  };
  catch_interrupts();
  clear_interrupt();
  std::string error;
  std::vector<SweepRow> mine;
  try {
    mine = run_sweep_points(plan.points, plan.todo, threads, options.timing, [&](std::size_t count, std::span<const SweepRow> finished) {
      progress.update(count);
      if (checkpoint && count < plan.todo.size() && std::chrono::steady_clock::now() - last_checkpoint >= save_every) {
        save(finished);
        last_checkpoint = std::chrono::steady_clock::now();
      }
    }, [] { return interrupt_signal() != 0; });
  } catch (const Error& failure) {
    error = failure.what();
  } catch (const std::bad_alloc&) {
    error = "out of memory: a point's workload is too large for this machine";
  } catch (const std::exception& failure) {
    // Every rank must reach the gather, so a bug is carried there too (and exits 1).
    error = std::string(kInternal).append(failure.what());
  }
  progress.finish();
  return ranks.gather(std::move(error), std::move(mine));
}

void write_report(const SweepCliOptions& options, const std::string& table) {
  std::istringstream csv(table);
  std::string title = "allocsim sweep:";  // each workload as given, commas and all
  for (std::size_t i = 0; i < options.sweep.workloads.size(); ++i) {
    title.append(i == 0 ? " " : "; ").append(options.sweep.workloads[i]);
  }
  write_report_page(options.report, title, batch_report_data(title, command_text(command_line()), batch_report_from_sweep(csv, "the sweep")));
}

// Rank 0's output: the table (to --csv or stdout), the report, and the closing line; a
// sweep cut short writes the rows of every point that finished and says how to go on.
void write_sweep_output(const SweepCliOptions& options, const SweepPlan& plan, std::vector<SweepRow> rows, unsigned threads,
                        int ranks, std::chrono::steady_clock::time_point start, std::ostream& out) {
  rows.insert(rows.begin(), plan.kept.begin(), plan.kept.end());
  std::set<std::size_t> finished;
  for (const SweepRow& row : rows) finished.insert(row.point);
  const int signal = interrupt_signal();
  const std::size_t total = plan.points.size();
  const bool cut = signal != 0 && finished.size() < total;
  const std::string stopped = cut ? std::string("interrupted by ") + signal_name(signal) + ": " + std::to_string(finished.size()) +
                                        " of " + std::to_string(total) + " points finished"
                                  : "";
  const std::size_t row_count = rows.size();
  std::ostringstream table;
  write_sweep_csv(table, options.timing, plan.extras, std::move(rows));
  if (!options.report.empty() && !cut) write_report(options, table.str());
  if (options.csv.empty()) {
    out << table.str();
    if (cut) throw Interrupted(signal, stopped + ", their rows printed above; with --csv FILE, --resume would run the rest");
    return;
  }
  write_file_atomically(options.csv, [&](std::ostream& file) { file << table.str(); });
  if (cut) {
    throw Interrupted(signal, stopped + ", their " + std::to_string(row_count) + " rows written to " + options.csv +
                                  "; the same command with --resume runs the rest");
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const std::size_t ran = total - plan.skipped;
  std::ostringstream line;
  line.precision(3);
  line << "sweep: " << total << " points (" << ran << " run, " << plan.skipped << " kept from the CSV), " << row_count
       << " rows in " << options.csv << "; " << seconds << " s, " << (seconds > 0 ? static_cast<double>(ran) / seconds : 0.0)
       << " points/s on " << threads << " threads";
  if (ranks > 1) line << " x " << ranks << " ranks";
  out << line.str() << '\n';
}

}  // namespace

int sweep_command(std::span<const std::string> args, std::ostream& out, std::ostream& err) {
  SweepCliOptions options;
  const po::options_description description = sweep_options(options);
  const po::variables_map values = parse_options(args, description);
  if (values.count("help")) {
    out << kSweepUsage << (mpi_built() ? "This build runs under mpirun (Boost.MPI).\n"
                                       : "This build has no MPI (install Boost.MPI and Open MPI, then rebuild).\n")
        << '\n' << description << '\n';
    return 0;
  }
  append_alloc_conf(options.sweep.policies, options.sweep.given_policies, options.alloc_conf, out);
  if (options.resume && options.csv.empty()) throw Error("--resume needs --csv FILE to resume from");
  if (!(options.save_every >= 0)) throw Error("--save-every must be 0 seconds or more");
  unsigned threads = threads_option(options.threads);
  const auto start = std::chrono::steady_clock::now();
  const std::unique_ptr<Ranks> ranks = make_ranks();
  const SweepPlan plan = plan_sweep(options, *ranks);
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency() / static_cast<unsigned>(ranks->local_size()));
  auto [first_error, rows] = run_planned(plan, options, threads, *ranks, err);
  if (ranks->rank() != 0) {
    const int signal = interrupt_signal();
    return !first_error.empty() ? (first_error.starts_with(kInternal) ? 1 : 2) : signal ? 128 + signal : 0;
  }
  if (first_error.starts_with(kInternal)) throw std::runtime_error(first_error.substr(kInternal.size()));
  if (!first_error.empty()) throw Error(first_error);
  write_sweep_output(options, plan, std::move(rows), threads, ranks->size(), start, out);
  return 0;
}

}  // namespace allocsim
