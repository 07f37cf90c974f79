// Replay throughput and memory, the figures DESIGN.md "Performance" asks us to hold:
// events per second of every registered policy on one 10M-event random trace, the ratio
// of each to a scan of the same events (the least any replay must touch) and to a no-op
// policy, all measured in one run, and heap bytes per trace event while replaying
// (targets: noop within 2x of scan, <= 32 B/event).
//
// Google Benchmark times the replays (`replay/<policy>`), and the summary table's rates and
// ratios are those runs' (bench/run_recorder.hpp). Our own main measures memory: this
// binary replaces the global operator new/delete to count live and peak heap bytes, and
// replays each policy once more outside Google Benchmark for the table's memory columns.
// ALLOCSIM_BENCH_EVENTS=N replays a shorter trace for a quick run;
// ALLOCSIM_BENCH_POLICIES=noop,caching replays only those (scan is always measured), for
// a profile under callgrind.

#include <benchmark/benchmark.h>
#include <malloc.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <memory>
#include <new>
#include <string>
#include <string_view>
#include <vector>

#include "bench/run_recorder.hpp"
#include "policies/registry.hpp"
#include "sim/engine.hpp"
#include "sim/direct_loop.hpp"
#include "workloads/random_trace.hpp"

// ---- Heap accounting -------------------------------------------------------------------
// Every C++ heap allocation of the process goes through these counters. The bytes counted
// are malloc_usable_size(), what the allocation really occupies, so a policy that makes
// many small node allocations pays for their rounding too. One thread replays at a time;
// relaxed atomics only keep Google Benchmark's own threads (if any) from racing us.

namespace {

std::atomic<std::size_t> heap_now{0};
std::atomic<std::size_t> heap_peak{0};
std::atomic<std::uint64_t> heap_allocations{0};

void* counted_malloc(std::size_t size, std::size_t alignment) noexcept {
  size = std::max<std::size_t>(size, 1);  // operator new(0) must still return a unique pointer
  void* const p = alignment <= __STDCPP_DEFAULT_NEW_ALIGNMENT__
                      ? std::malloc(size)
                      : std::aligned_alloc(alignment, (size + alignment - 1) / alignment * alignment);
  if (p == nullptr) return nullptr;
  const std::size_t now = heap_now.fetch_add(malloc_usable_size(p), std::memory_order_relaxed) + malloc_usable_size(p);
  std::size_t peak = heap_peak.load(std::memory_order_relaxed);
  while (now > peak && !heap_peak.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
  }
  heap_allocations.fetch_add(1, std::memory_order_relaxed);
  return p;
}

void counted_free(void* p) noexcept {
  if (p == nullptr) return;
  heap_now.fetch_sub(malloc_usable_size(p), std::memory_order_relaxed);
  std::free(p);
}

void* counted_new(std::size_t size, std::size_t alignment) {
  void* const p = counted_malloc(size, alignment);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}

void reset_heap_peak() { heap_peak.store(heap_now.load(std::memory_order_relaxed), std::memory_order_relaxed); }

}  // namespace

// clang-format off
void* operator new(std::size_t n) { return counted_new(n, 0); }
void* operator new[](std::size_t n) { return counted_new(n, 0); }
void* operator new(std::size_t n, std::align_val_t a) { return counted_new(n, static_cast<std::size_t>(a)); }
void* operator new[](std::size_t n, std::align_val_t a) { return counted_new(n, static_cast<std::size_t>(a)); }
void* operator new(std::size_t n, const std::nothrow_t&) noexcept { return counted_malloc(n, 0); }
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept { return counted_malloc(n, 0); }
void* operator new(std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept { return counted_malloc(n, static_cast<std::size_t>(a)); }
void* operator new[](std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept { return counted_malloc(n, static_cast<std::size_t>(a)); }
void operator delete(void* p) noexcept { counted_free(p); }
void operator delete[](void* p) noexcept { counted_free(p); }
void operator delete(void* p, std::size_t) noexcept { counted_free(p); }
void operator delete[](void* p, std::size_t) noexcept { counted_free(p); }
void operator delete(void* p, std::align_val_t) noexcept { counted_free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { counted_free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { counted_free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { counted_free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { counted_free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { counted_free(p); }
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept { counted_free(p); }
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept { counted_free(p); }
// clang-format on

namespace {

using namespace allocsim;

// The baseline: no device calls and no data structure, so what it measures is the engine
// alone. Addresses come from a counter and are never reused.
class NoopPolicy final : public Policy {
 public:
  Allocation allocate(const Request& request) override {
    const Bytes size = align_up(request.bytes, kBlockAlignment);
    const Block block{next_addr_, size, request.bytes, request.id, request.stream};
    next_addr_ += std::max(size, kBlockAlignment);  // zero-byte blocks get distinct addresses too
    allocated_ += size;
    return block;
  }
  void deallocate(const Block& block, Nanos) override { allocated_ -= block.size; }
  PolicyStats stats() const override { return PolicyStats{.allocated = allocated_, .reserved = allocated_}; }

 private:
  Addr next_addr_ = kBlockAlignment;  // address 0 stays invalid
  Bytes allocated_ = 0;
};

struct BenchCase {
  std::string policy;  // its name in the table
  PolicyMaker maker;
};

// Whether ALLOCSIM_BENCH_POLICIES (a comma-separated list; unset or empty: every policy)
// names `policy`.
bool selected(std::string_view policy) {
  const char* const text = std::getenv("ALLOCSIM_BENCH_POLICIES");
  if (text == nullptr || *text == '\0') return true;
  std::string_view rest = text;
  while (!rest.empty()) {
    const std::string_view name = rest.substr(0, rest.find(','));
    if (name == policy) return true;
    rest.remove_prefix(std::min(rest.size(), name.size() + 1));
  }
  return false;
}

std::vector<BenchCase> bench_cases() {
  std::vector<BenchCase> cases{{"noop", PolicyMaker{"noop", [](Device&) {
                                         return MadePolicy(std::make_unique<NoopPolicy>(), &direct_loop<NoopPolicy>);
                                       }}}};
  for (const PolicyInfo& info : all_policies()) {
    cases.push_back({std::string(info.name), policy_maker(info.name)});
  }
  std::erase_if(cases, [](const BenchCase& bench) { return !selected(bench.policy); });
  return cases;
}

std::uint64_t trace_events() {
  const char* const text = std::getenv("ALLOCSIM_BENCH_EVENTS");
  if (text == nullptr || *text == '\0') return 10'000'000;
  std::uint64_t events = 0;
  const auto [end, error] = std::from_chars(text, text + std::strlen(text), events);
  if (error != std::errc{} || *end != '\0' || events == 0) {
    std::fprintf(stderr, "allocsim_bench: ALLOCSIM_BENCH_EVENTS=%s is not a positive number of events\n", text);
    std::exit(2);
  }
  return events;
}

// One trace for every benchmark, built on first use so that it is never timed.
std::shared_ptr<const Trace> shared_trace() {
  static const std::shared_ptr<const Trace> trace = [] {
    RandomTraceOptions options;
    options.events = trace_events();
    options.seed = 1;
    return std::make_shared<const Trace>(make_random_trace(options, "random"));
  }();
  return trace;
}

// The floor under every replay: one pass that reads each event and, for a free, the size
// of the allocation it frees (a read far back in memory, as the engine's own is), summed
// so that the compiler must do all of it.
std::uint64_t scan(const Trace& trace) {
  std::uint64_t sum = 0;
  for (const Event& event : trace.events) {
    sum += event.time + index_of(event.id);
    if (event.op == Op::free) sum += trace.bytes_of(event.id);
  }
  return sum;
}

void scan_benchmark(benchmark::State& state) {
  const Trace& trace = *shared_trace();
  for (auto _ : state) benchmark::DoNotOptimize(scan(trace));
  const auto events = static_cast<double>(trace.events.size());
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(trace.events.size()));
  state.counters["events_per_second"] = benchmark::Counter(events, benchmark::Counter::kIsIterationInvariantRate);
}

Scenario scenario_for(const PolicyMaker& policy) {
  Scenario scenario;  // default DeviceSpec: 16 GiB; bestfit takes all of it as one region
  scenario.tenants.push_back(TenantSpec{shared_trace(), policy});
  return scenario;
}

void replay_benchmark(benchmark::State& state, const BenchCase& bench) {
  const Scenario scenario = scenario_for(bench.maker);
  const auto events = static_cast<std::int64_t>(scenario.tenants.front().trace->events.size());
  for (auto _ : state) {
    const RunResult result = run(scenario);
    if (result.events_replayed != static_cast<std::size_t>(events)) {
      state.SkipWithError("the replay stopped at an OOM");
      break;
    }
    benchmark::DoNotOptimize(result.peak_device);
  }
  state.SetItemsProcessed(state.iterations() * events);
  state.counters["events_per_second"] =
      benchmark::Counter(static_cast<double>(events), benchmark::Counter::kIsIterationInvariantRate);
}

// CPU time of this thread: Google Benchmark's rates use CPU time too, and on a shared
// machine it is what a busy neighbour disturbs least.
double cpu_seconds() {
  timespec now{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  return static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) * 1e-9;
}

struct MemoryRow {
  std::string policy;
  double events_per_second = 0;  // of this one pass: the table's rate when Google Benchmark skipped the policy
  double replay_peak_per_event = 0;  // trace + engine per-id state + policy, while replaying
  std::uint64_t allocations = 0;  // heap allocations during the whole run(): none per event is the goal
  bool completed = true;
};

// One timed replay per policy under the counting operator new. The trace is alive during
// each replay, so the peak above the pre-trace baseline includes it, as it should.
std::vector<MemoryRow> measure(const std::vector<BenchCase>& cases, std::size_t baseline) {
  std::vector<MemoryRow> rows;
  {
    const Trace& trace = *shared_trace();
    reset_heap_peak();
    const std::uint64_t allocations_before = heap_allocations.load(std::memory_order_relaxed);
    const double start = cpu_seconds();
    const std::uint64_t sum = scan(trace);
    const double seconds = cpu_seconds() - start;
    benchmark::DoNotOptimize(sum);
    rows.push_back(MemoryRow{
        .policy = "scan",
        .events_per_second = static_cast<double>(trace.events.size()) / seconds,
        .replay_peak_per_event = static_cast<double>(heap_peak.load() - baseline) / static_cast<double>(trace.events.size()),
        .allocations = heap_allocations.load(std::memory_order_relaxed) - allocations_before,
    });
  }
  for (const BenchCase& bench : cases) {
    const Scenario scenario = scenario_for(bench.maker);
    const std::size_t events = scenario.tenants.front().trace->events.size();
    reset_heap_peak();
    const std::uint64_t allocations_before = heap_allocations.load(std::memory_order_relaxed);
    const double start = cpu_seconds();
    const RunResult result = run(scenario);
    const double seconds = cpu_seconds() - start;
    rows.push_back(MemoryRow{
        .policy = bench.policy,
        .events_per_second = static_cast<double>(events) / seconds,
        .replay_peak_per_event = static_cast<double>(heap_peak.load() - baseline) / static_cast<double>(events),
        .allocations = heap_allocations.load(std::memory_order_relaxed) - allocations_before,
        .completed = result.events_replayed == events,
    });
  }
  return rows;
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;

  // Build the shared trace first, measuring what generation costs at its peak (the
  // generator's temporary live-id deque and the builder's per-id table included).
  const std::size_t baseline = heap_now.load();
  reset_heap_peak();
  const auto gen_start = std::chrono::steady_clock::now();
  const std::shared_ptr<const Trace> trace = shared_trace();
  const std::chrono::duration<double> gen_seconds = std::chrono::steady_clock::now() - gen_start;
  const auto events = static_cast<double>(trace->events.size());
  const double gen_peak_per_event = static_cast<double>(heap_peak.load() - baseline) / events;
  const double trace_per_event = static_cast<double>(heap_now.load() - baseline) / events;

  const std::vector<BenchCase> cases = bench_cases();
  const std::vector<MemoryRow> rows = measure(cases, baseline);

  benchmark::RegisterBenchmark("replay/scan", scan_benchmark)->Unit(benchmark::kMillisecond)->Iterations(3);
  for (const BenchCase& bench : cases) {
    benchmark::RegisterBenchmark(("replay/" + bench.policy).c_str(), replay_benchmark, bench)
        ->Unit(benchmark::kMillisecond)
        ->Iterations(3);
  }
  bench::RunRecorder recorder;
  benchmark::RunSpecifiedBenchmarks(&recorder);
  benchmark::Shutdown();
  // A rate from the timed runs above (their mean CPU time per replay) where they ran.
  const auto rate = [&](const MemoryRow& row) {
    const double seconds = recorder.seconds("replay/" + row.policy);
    return seconds > 0 ? events / seconds : row.events_per_second;
  };

  std::printf("\nreplay of a random trace: %.0f events, %zu allocations; generated in %.2f s\n", events,
              trace->allocations(), gen_seconds.count());
  std::printf("heap per event: trace %.1f B, peak while generating %.1f B (target: <= 32 B while replaying)\n",
              trace_per_event, gen_peak_per_event);
  std::printf("%-10s %13s %14s %14s %16s %14s %14s\n", "policy", "events/s(cpu)", "ratio_to_scan", "ratio_to_noop",
              "replay_peak B/ev", "heap allocs", "allocs/ev");
  const double scan_rate = rate(rows[0]);  // measure() puts scan first, then noop
  const double noop_rate = rows.size() > 1 && rows[1].policy == "noop" ? rate(rows[1]) : 0;
  for (const MemoryRow& row : rows) {
    std::printf("%-10s %12.2fM %14.3f %14.3f %16.1f %14llu %14.6f%s\n", row.policy.c_str(), rate(row) / 1e6,
                rate(row) / scan_rate, noop_rate > 0 ? rate(row) / noop_rate : 0.0, row.replay_peak_per_event,
                static_cast<unsigned long long>(row.allocations), static_cast<double>(row.allocations) / events,
                row.completed ? "" : "  (stopped at an OOM)");
  }
  return 0;
}
