// A trace file loading on its own thread while the engine replays what is read so far
// gives the figures of the trace read whole, for our CSV and .atrace (which report as they
// build) and for a reader that does not; its errors are the reader's own.
#include <fstream>
#include <map>

#include <catch2/catch.hpp>

#include "policies/registry.hpp"
#include "same_results.hpp"
#include "sim/background_trace.hpp"
#include "sim/engine.hpp"
#include "sim/error.hpp"
#include "workloads/atrace.hpp"
#include "workloads/catalogue.hpp"
#include "workloads/csv_trace.hpp"
#include "workloads/random_trace.hpp"

namespace allocsim {
namespace {

using test::check_same;
using test::scratch;

// Two reports' worth of events and more (a report every 65,536), OOMs on a small device.
std::shared_ptr<const Trace> random_trace(std::uint64_t events = 150'000) {
  static std::map<std::uint64_t, std::shared_ptr<const Trace>> made;
  std::shared_ptr<const Trace>& trace = made[events];
  if (!trace) {
    RandomTraceOptions options;
    options.events = events;
    options.seed = 9;
    options.max_bytes = 4_MiB;
    options.target_live = 96_MiB;
    options.streams = 2;
    options.sync_every = 1000;
    trace = std::make_shared<const Trace>(make_random_trace(options, "random"));
  }
  return trace;
}

Scenario scenario_of(TenantSpec tenant, Bytes capacity, OnOom on_oom) {
  Scenario scenario;
  scenario.device.capacity = capacity;
  scenario.on_oom = on_oom;
  scenario.tenants.push_back(std::move(tenant));
  return scenario;
}

// optimal plans over the whole trace, slowly: it gets a short one, which its prepare()
// waits for.
TEST_CASE("a trace file loading in the background replays as the file read whole", "[engine][background]") {
  const std::string format = GENERATE("csv", "atrace");
  const std::string policy = GENERATE("caching", "bfc", "bestfit", "optimal");
  const std::shared_ptr<const Trace> trace = random_trace(policy == "optimal" ? 20'000 : 150'000);
  const auto [capacity, on_oom] =
      GENERATE(table<Bytes, OnOom>({{16_GiB, OnOom::stop}, {150_MiB, OnOom::continue_run}, {150_MiB, OnOom::stop}}));
  INFO(format << " under " << policy << " on " << format_bytes(capacity));
  const auto file = scratch("background." + format);
  if (format == "csv") {
    write_csv_trace_file(*trace, file);
  } else {
    write_atrace_file(*trace, file);
  }
  const auto whole = std::make_shared<const Trace>(load_workload(file.string()));
  const auto loading = load_in_background(file.string());
  const RunResult expected = run(scenario_of(TenantSpec{whole, policy_maker(policy)}, capacity, on_oom));
  const RunResult got = run(scenario_of(TenantSpec::from_source(loading, policy_maker(policy)), capacity, on_oom));
  check_same(expected.tenants[0], got.tenants[0]);
  CHECK(got.tenants[0].workload == file.string());
  CHECK(got.peak_device == expected.peak_device);
  CHECK(got.tenants[0].at_peak.top_layers == expected.tenants[0].at_peak.top_layers);
  // The trace it ends with is the one read whole.
  const Trace& loaded = *loading->trace();
  CHECK(loaded.events.size() == whole->events.size());
  CHECK(loaded.requested == whole->requested);
  CHECK(loaded.live_lower_bound == whole->live_lower_bound);
}

TEST_CASE("a trace loading in the background fails with its reader's error, and at once", "[engine][background]") {
  const auto file = scratch("broken.csv");
  {
    std::ofstream out(file);
    write_csv_trace(*random_trace(), out);
    out << "1,alloc,x,ten,0,other\n";  // after every good row: the replay reaches it first
  }
  std::string expected;
  try {
    read_csv_trace_file(file);
  } catch (const Error& error) {
    expected = error.what();
  }
  REQUIRE_THAT(expected, Catch::Contains("bytes 'ten'"));
  const Scenario scenario = scenario_of(TenantSpec::from_source(load_in_background(file.string()), policy_maker("caching")), 16_GiB,
                                        OnOom::stop);
  CHECK_THROWS_WITH(run(scenario), expected);

  // A file that cannot be read says so as load_workload does.
  const std::string missing = (scratch("none") / "missing.csv").string();
  std::string cannot_open;
  try {
    load_workload(missing);
  } catch (const Error& error) {
    cannot_open = error.what();
  }
  REQUIRE_FALSE(cannot_open.empty());
  CHECK_THROWS_WITH(run(scenario_of(TenantSpec::from_source(load_in_background(missing), policy_maker("bfc")), 16_GiB, OnOom::stop)),
                    cannot_open);
}

TEST_CASE("a reader that does not report is replayed once it has read the whole trace", "[engine][background]") {
  const auto trace = random_trace();
  const BackgroundTrace loading("copy", [&](TraceProgress&) { return *trace; });
  const std::unique_ptr<EventSource> source = loading.open();
  std::size_t events = 0;
  for (EventWindow window = source->next(); !window.events.empty(); window = source->next()) {
    for (std::size_t i = 0; i < window.events.size(); ++i, ++events) {
      REQUIRE(window.events[i].time == trace->events[events].time);
      if (window.events[i].op == Op::alloc) REQUIRE(window.bytes_at(i) == trace->bytes_of(window.events[i].id));
    }
  }
  CHECK(events == trace->events.size());
  CHECK(source->slots() == trace->allocations());
  CHECK(source->name() == "copy");
}

TEST_CASE("a builder reporting to a background load holds to the bounds its reader gave", "[engine][background]") {
  TraceProgress progress;
  TraceBuilder allocations(TraceInfo{"t"});
  allocations.report_to(progress, 8, 1);
  allocations.alloc(0, 10);
  CHECK_THROWS_WITH(allocations.alloc(1, 10), Catch::Contains("more allocations than the 1 its reader reserved"));

  TraceBuilder events(TraceInfo{"t"});
  events.report_to(progress, 2, 2);
  const AllocId id = events.alloc(0, 10);
  events.free(1, id);
  CHECK_THROWS_WITH(events.release(2), Catch::Contains("more events than the 2 its reader reserved"));
  CHECK(progress.slots_hint() == 2);
}

}  // namespace
}  // namespace allocsim
