// Stopping early (what a SIGINT or SIGTERM asks for, sim/interrupt): the thread pool starts
// no task once `stop` says so, and the sweep and maxbatch return exactly the work that
// finished, each piece as a run never stopped gives it.
#include <atomic>
#include <csignal>
#include <sstream>

#include <catch2/catch.hpp>

#include "policies/registry.hpp"
#include "sim/engine.hpp"
#include "sim/interrupt.hpp"
#include "studies/maxbatch_study.hpp"
#include "studies/parallel.hpp"
#include "studies/sweep_grid.hpp"
#include "studies/sweep_run.hpp"
#include "workloads/catalogue.hpp"

namespace allocsim {
namespace {

TEST_CASE("stop: parallel_for starts no task once stop says so and finishes the running ones", "[stop]") {
  for (const unsigned threads : {1u, 3u}) {
    INFO(threads);
    std::atomic<std::size_t> started{0};
    std::vector<int> ran(100, 0);
    const std::size_t done = parallel_for(
        ran.size(), threads, [&](std::size_t i) { ++started, ran[i] = 1; }, {}, [&] { return started >= 10; });
    CHECK(done == started);
    CHECK(done >= 10);
    CHECK(done < 10 + threads + 1);  // each thread may have begun one more before it saw the flag
    CHECK(static_cast<std::size_t>(std::count(ran.begin(), ran.end(), 1)) == done);
  }
  CHECK(parallel_for(5, 2, [](std::size_t) {}, {}, [] { return false; }) == 5);
  CHECK(parallel_for(5, 2, [](std::size_t) {}, {}, [] { return true; }) == 0);
}

// A signal caught as `allocsim sweep` catches them; put back as it was when done.
class CaughtSignal {
 public:
  CaughtSignal() {
    catch_interrupts();
    std::raise(SIGINT);
  }
  ~CaughtSignal() {
    clear_interrupt();
    std::signal(SIGINT, SIG_DFL);
    std::signal(SIGTERM, SIG_DFL);
  }
  CaughtSignal(const CaughtSignal&) = delete;
  CaughtSignal& operator=(const CaughtSignal&) = delete;
};

TEST_CASE("stop: a caught signal stops a replay and a generator while they run", "[stop]") {
  const auto trace = std::make_shared<const Trace>(load_workload("random:n=70000"));  // more than a check's events
  Scenario alone;
  alone.tenants.push_back(TenantSpec{trace, policy_maker("direct")});
  Scenario two = alone;  // the merged loop of several tenants asks too
  two.tenants.push_back(TenantSpec{trace, policy_maker("direct")});
  CHECK(run(two).events_replayed == 2 * trace->events.size());
  const CaughtSignal caught;
  CHECK_THROWS_AS(run(alone), Interrupted);
  CHECK_THROWS_AS(run(two), Interrupted);
  CHECK_THROWS_WITH(load_workload("random:n=3000"), "interrupted by SIGINT");
}

TEST_CASE("stop: a sweep's point a signal cut short is dropped, not half written", "[stop][sweep]") {
  SweepOptions options;
  options.workloads = {"random:n=500"};
  options.policies = {"direct"};
  const std::vector<SweepPoint> points = expand_sweep(options);
  const std::vector<std::size_t> todo{0};
  const CaughtSignal caught;
  CHECK(run_sweep_points(points, todo, 1, false, [](std::size_t, std::span<const SweepRow>) {}).empty());
}

TEST_CASE("stop: a stopped sweep returns whole points, each as the full run has it", "[stop][sweep]") {
  SweepOptions options;
  options.workloads = {"random:n=500"};
  options.params = {"seed=1:12:1"};
  options.policies = {"bestfit,direct"};
  options.tenants = {"random:n=50,seed=9@direct"};  // two rows a point: a point is never cut in half
  const std::vector<SweepPoint> points = expand_sweep(options);
  REQUIRE(points.size() == 24);
  std::vector<std::size_t> todo(points.size());
  for (std::size_t i = 0; i < todo.size(); ++i) todo[i] = i;
  const auto csv = [&](std::vector<SweepRow> rows) {
    std::ostringstream out;
    write_sweep_csv(out, false, probe_extra_columns(points), std::move(rows));
    return out.str();
  };
  const std::vector<SweepRow> full = run_sweep_points(points, todo, 1, false, [](std::size_t, std::span<const SweepRow>) {});
  std::size_t asked = 0;
  const std::vector<SweepRow> stopped = run_sweep_points(
      points, todo, 1, false, [](std::size_t, std::span<const SweepRow>) {}, [&] { return ++asked > 5; });
  REQUIRE(stopped.size() == 2 * 5);  // one thread: five points started, then the flag
  std::vector<SweepRow> same_points;
  for (const SweepRow& row : full) {
    if (row.point < 5) same_points.push_back(row);
  }
  CHECK(csv(stopped) == csv(same_points));
}

TEST_CASE("stop: a stopped maxbatch marks the searches it never ran", "[stop][maxbatch]") {
  MaxBatchStudy study;
  study.workload = parse_workload_spec("seed_cnn");
  study.policies = {policy_maker("direct"), policy_maker("bestfit")};
  study.devices = {DeviceSpec{}};
  study.devices.front().capacity = 256_MiB;
  study.limit = 512;
  study.threads = 1;
  const MaxBatchResults full = run_maxbatch(study);
  for (const MaxBatchRow& row : full.rows) CHECK(row.searched);
  std::size_t asked = 0;
  study.stop = [&] { return ++asked > 3; };
  const MaxBatchResults stopped = run_maxbatch(study);
  REQUIRE(stopped.rows.size() == full.rows.size());
  for (std::size_t i = 0; i < stopped.rows.size(); ++i) {
    INFO(i);
    CHECK(stopped.rows[i].searched == (i < 3));
    if (i < 3) CHECK(stopped.rows[i].found.largest == full.rows[i].found.largest);
  }
}

}  // namespace
}  // namespace allocsim
