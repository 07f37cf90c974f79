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
  append_alloc_conf(options.sweep.policies, options.alloc_conf, out);
  if (options.resume && options.csv.empty()) throw Error("--resume needs --csv FILE to resume from");
  if (!(options.save_every >= 0)) throw Error("--save-every must be 0 seconds or more");
  unsigned threads = threads_option(options.threads);
  const auto start = std::chrono::steady_clock::now();
  const std::vector<SweepPoint> points = expand_sweep(options.sweep);
  OutputPaths paths;  // the --resume file is the output itself, read first
  for (const SweepPoint& point : points) {
    for (const WorkloadSpec& workload : point.workloads) {
      if (const FileChoice* file = workload.file()) paths.input("--workload", file->path);
    }
  }
  paths.output("--csv", options.csv);
  paths.output("--report", options.report);
  paths.check();
  const std::vector<std::string> extras = probe_extra_columns(points);
  const std::unique_ptr<Ranks> ranks = make_ranks();
  const bool root = ranks->rank() == 0;

  // Rank 0 reads what an earlier run left; every rank learns which points are done.
  std::vector<SweepRow> kept;
  std::pair<std::string, std::vector<std::size_t>> done;
  if (root && options.resume && std::filesystem::exists(options.csv)) {
    try {
      std::ifstream in(options.csv, std::ios::binary);
      if (!in) throw Error("--resume: cannot read " + options.csv);
      kept = read_sweep_csv(in, options.timing, points, options.csv);
      for (const SweepRow& row : kept) done.second.push_back(row.point);
    } catch (const Error& error) {
      done.first = error.what();
    }
  }
  done = ranks->broadcast(std::move(done));
  if (!done.first.empty()) throw Error(done.first);
  const std::set<std::size_t> skip(done.second.begin(), done.second.end());
  std::vector<std::size_t> todo;
  for (const SweepPoint& point : points) {
    if (!skip.contains(point.index) && point.index % static_cast<std::size_t>(ranks->size()) == static_cast<std::size_t>(ranks->rank())) {
      todo.push_back(point.index);
    }
  }

  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency() / static_cast<unsigned>(ranks->local_size()));
  Progress progress(err, todo.size(), root && !options.quiet && Progress::stderr_is_terminal());
  // One process alone writes its progress to the file now and then, so an interrupted
  // sweep leaves what it finished for --resume.
  const bool checkpoint = ranks->size() == 1 && !options.csv.empty();
  const auto save_every = std::chrono::duration<double>(options.save_every);
  auto last_checkpoint = std::chrono::steady_clock::now();
  const auto save = [&](std::span<const SweepRow> finished) {
    std::vector<SweepRow> rows = kept;
    rows.insert(rows.end(), finished.begin(), finished.end());
    write_file_atomically(options.csv, [&](std::ostream& file) { write_sweep_csv(file, options.timing, extras, rows); });
  };
  // ^C or a kill between points: the points that finished are saved below, for --resume.
  catch_interrupts();
  clear_interrupt();
  std::string error;
  std::vector<SweepRow> mine;
  try {
    mine = run_sweep_points(points, todo, threads, options.timing, [&](std::size_t count, std::span<const SweepRow> finished) {
      progress.update(count);
      if (checkpoint && count < todo.size() && std::chrono::steady_clock::now() - last_checkpoint >= save_every) {
        save(finished);
        last_checkpoint = std::chrono::steady_clock::now();
      }
    }, [] { return interrupt_signal() != 0; });
  } catch (const Error& failure) {
    error = failure.what();
  } catch (const std::bad_alloc&) {
    error = "out of memory: a point's workload is too large for this machine";
  } catch (const std::exception& failure) {
    // Every rank must reach the gather below, so a bug is carried there too (and exits 1).
    error = std::string(kInternal).append(failure.what());
  }
  progress.finish();
  auto [first_error, rows] = ranks->gather(std::move(error), std::move(mine));
  const int signal = interrupt_signal();
  if (!root) return !first_error.empty() ? (first_error.starts_with(kInternal) ? 1 : 2) : signal ? 128 + signal : 0;
  if (first_error.starts_with(kInternal)) throw std::runtime_error(first_error.substr(kInternal.size()));
  if (!first_error.empty()) throw Error(first_error);

  rows.insert(rows.begin(), kept.begin(), kept.end());
  std::set<std::size_t> finished;
  for (const SweepRow& row : rows) finished.insert(row.point);
  // Cut short: the rows of every point that finished, written whole, and how to go on.
  const bool cut = signal != 0 && finished.size() < points.size();
  const std::string stopped = cut ? std::string("interrupted by ") + signal_name(signal) + ": " +
                                        std::to_string(finished.size()) + " of " + std::to_string(points.size()) +
                                        " points finished"
                                  : "";
  const std::size_t row_count = rows.size();
  std::ostringstream table;
  write_sweep_csv(table, options.timing, extras, std::move(rows));
  if (!options.report.empty() && !cut) {
    std::istringstream csv(table.str());
    std::string title = "allocsim sweep:";  // each workload as given, commas and all
    for (std::size_t i = 0; i < options.sweep.workloads.size(); ++i) {
      title.append(i == 0 ? " " : "; ").append(options.sweep.workloads[i]);
    }
    write_report_page(options.report, title, batch_report_data(title, command_text(command_line()), batch_report_from_sweep(csv, "the sweep")));
  }
  if (options.csv.empty()) {
    out << table.str();
    if (cut) throw Interrupted(signal, stopped + ", their rows printed above; with --csv FILE, --resume would run the rest");
    return 0;
  }
  write_file_atomically(options.csv, [&](std::ostream& file) { file << table.str(); });
  if (cut) {
    throw Interrupted(signal, stopped + ", their " + std::to_string(row_count) + " rows written to " + options.csv +
                                  "; the same command with --resume runs the rest");
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const std::size_t ran = points.size() - skip.size();
  std::ostringstream line;
  line.precision(3);
  line << "sweep: " << points.size() << " points (" << ran << " run, " << skip.size() << " kept from the CSV), "
       << row_count << " rows in " << options.csv << "; " << seconds << " s, "
       << (seconds > 0 ? static_cast<double>(ran) / seconds : 0.0) << " points/s on " << threads << " threads";
  if (ranks->size() > 1) line << " x " << ranks->size() << " ranks";
  out << line.str() << '\n';
  return 0;
}

}  // namespace allocsim
