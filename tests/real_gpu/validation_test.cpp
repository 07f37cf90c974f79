// The replay harness on the host stand-in: the code path `allocsim validate` takes on a
// GPU. Where the stand-in behaves as the model says, every exact metric must agree.
#include <sstream>

#include <catch2/catch.hpp>

#include "real_gpu/host_api.hpp"
#include "real_gpu/host_card.hpp"
#include "policies/registry.hpp"
#include "real_gpu/validation.hpp"
#include "workloads/catalogue.hpp"

namespace allocsim {
namespace {

HostDeviceConfig card(bool backed) { return test::host_card(512_MiB, 64_MiB, backed); }

const MetricComparison& row(const std::vector<MetricComparison>& rows, std::string_view metric) {
  for (const MetricComparison& comparison : rows) {
    if (comparison.metric == metric) return comparison;
  }
  FAIL("no metric " << metric);
  throw;
}

void require_exact_agreement(const std::vector<MetricComparison>& rows) {
  for (const MetricComparison& comparison : rows) {
    INFO(comparison.metric);
    if (comparison.target == Target::exact) CHECK(comparison.agrees());
  }
}

std::shared_ptr<const Trace> hand_trace() {
  // direct, 2 MiB pages: segments of 4, 2 and 6 MiB; reserved 4, 6, 2, 8, 6, 0 MiB.
  TraceBuilder builder(TraceInfo{"hand", "test"});
  const AllocId a = builder.alloc(0, 3_MiB);
  const AllocId b = builder.alloc(1, 1_MiB);
  builder.free(2, a);
  const AllocId c = builder.alloc(3, 5_MiB);
  builder.free(4, b);
  builder.free(5, c);
  return std::make_shared<const Trace>(std::move(builder).finish());
}

TEST_CASE("validation: a hand-worked trace under direct, in simulation and on the stand-in", "[real_gpu]") {
  HostDeviceApi api(card(true));
  ValidationOptions options;
  options.policy = parse_policy_spec("direct");
  const Validation validation = validate(api, hand_trace(), options);
  const std::vector<MetricComparison> rows = compare(validation);
  require_exact_agreement(rows);
  CHECK(row(rows, "peak_reserved_bytes").measured == double(8_MiB));
  CHECK(row(rows, "device_used_peak_bytes").measured == double(8_MiB));
  CHECK(row(rows, "device_mallocs").measured == 3);
  CHECK(row(rows, "device_frees").measured == 3);
  CHECK_FALSE(row(rows, "first_oom_event").measured);
  CHECK(validation.device.context_overhead == 64_MiB);
  REQUIRE(validation.calls.size() == 6);
  CHECK(validation.calls[0].bytes == 4_MiB);
  CHECK(api.counters().bytes_touched == 12_MiB);
  CHECK(api.live_allocations() == 0);  // everything went back, ballast included
}

TEST_CASE("validation: reserved bytes are exactly the simulation's for bfc, caching and direct", "[real_gpu]") {
  const std::string policy = GENERATE(as<std::string>{}, "bfc", "caching", "direct", "growth", "expandable");
  const int seed = GENERATE(1, 2, 3);
  const bool backed = GENERATE(false, true);
  INFO(policy << " seed " << seed << (backed ? " backed" : ""));
  HostDeviceApi api(card(backed));
  const auto trace = std::make_shared<const Trace>(
      load_workload("random:n=1500,min=256,max=3MiB,live=48MiB,seed=" + std::to_string(seed)));
  ValidationOptions options;
  options.policy = parse_policy_spec(policy);
  const Validation validation = validate(api, trace, options);
  const std::vector<MetricComparison> rows = compare(validation);
  if (!backed) {
    // The stand-in hands out increasing addresses like SimDevice: nothing may differ.
    require_exact_agreement(rows);
  } else if (policy == "direct" || policy == "bfc" || policy == "expandable") {
    // Heap addresses come in any order, as cudaMalloc's may. These policies never choose
    // between segments by address, so where their segments lie cannot change what they reserve.
    CHECK(row(rows, "peak_reserved_bytes").agrees());
    CHECK(row(rows, "device_used_peak_bytes").agrees());
  }
  // caching and growth break ties between equal free blocks by address, as PyTorch and
  // TensorFlow do: with segments in another address order they may split other blocks and
  // reserve differently (seen under AddressSanitizer's heap). On a GPU that is what
  // `allocsim validate` measures; here the run must only be sound.
  CHECK(validation.measured.tenants[0].peak_reserved >= validation.measured.tenants[0].peak_allocated);
  CHECK(row(rows, "peak_reserved_bytes").measured > 0);
  CHECK(validation.measured.tenants[0].events_replayed == trace->events.size());
  const TenantResult& real = validation.measured.tenants[0];
  std::uint64_t mallocs = 0;
  std::uint64_t frees = 0;
  for (const DeviceCall& call : validation.calls) {
    mallocs += call.op == DeviceOp::malloc;
    frees += call.op == DeviceOp::free;
  }
  CHECK(mallocs == real.device_mallocs);
  CHECK(frees >= real.device_frees);  // the result is taken before the tenant's teardown frees
  CHECK(frees == mallocs);
  CHECK(api.live_allocations() == 0);
}

TEST_CASE("validation: page-mapped segments reserve what the simulation does", "[real_gpu]") {
  const std::string policy = GENERATE(as<std::string>{}, "direct", "expandable");
  INFO(policy);
  HostDeviceApi api(card(true));
  const auto trace = std::make_shared<const Trace>(load_workload("random:n=1500,min=256,max=3MiB,live=48MiB,seed=9"));
  ValidationOptions options;
  options.policy = parse_policy_spec(policy);
  options.device.source = SegmentSource::vmm;
  const Validation validation = validate(api, trace, options);
  const std::vector<MetricComparison> rows = compare(validation);
  CHECK(row(rows, "peak_reserved_bytes").agrees());
  CHECK(row(rows, "device_used_peak_bytes").agrees());
  CHECK(api.counters().maps > 0);
  CHECK(api.counters().mallocs == 0);
  CHECK(api.counters().unmaps == api.counters().maps);
}

TEST_CASE("validation: vmm and expandable map through the device's VMM calls and agree exactly", "[real_gpu][vmm]") {
  const std::string policy = GENERATE(as<std::string>{}, "vmm", "expandable");
  INFO(policy);
  HostDeviceApi api(card(false));
  const auto trace = std::make_shared<const Trace>(load_workload("random:n=1500,min=256,max=3MiB,live=48MiB,seed=9"));
  ValidationOptions options;
  options.policy = parse_policy_spec(policy);
  const Validation validation = validate(api, trace, options);
  require_exact_agreement(compare(validation));
  CHECK(api.counters().mallocs == 0);  // every page is physical memory, never a cudaMalloc
  CHECK(api.counters().creates > 0);
  CHECK(api.counters().maps > 0);
  CHECK(api.counters().unmaps == api.counters().maps);
  CHECK(api.counters().releases == api.counters().creates);
  CHECK(api.live_allocations() == 0);  // reservations given back too
}

TEST_CASE("validation: an OOM under a cap happens at the same request on both sides", "[real_gpu]") {
  HostDeviceApi api(card(false));
  TraceBuilder builder(TraceInfo{"three", "test"});
  builder.alloc(0, 6_MiB);
  builder.alloc(1, 6_MiB);
  builder.alloc(2, 6_MiB);  // 18 MiB > the 16 MiB the cap leaves
  const auto trace = std::make_shared<const Trace>(std::move(builder).finish());
  ValidationOptions options;
  options.policy = parse_policy_spec("direct");
  options.device.cap = 80_MiB;
  const Validation validation = validate(api, trace, options);
  const std::vector<MetricComparison> rows = compare(validation);
  require_exact_agreement(rows);
  CHECK(validation.ballast == 432_MiB);
  CHECK(validation.device.capacity == 80_MiB);
  CHECK(row(rows, "oom_count").measured == 1);
  CHECK(row(rows, "first_oom_event").measured == 2);
  CHECK(row(rows, "first_oom_bytes").measured == double(6_MiB));
  CHECK(row(rows, "first_oom_kind").measured == double(static_cast<int>(OomKind::capacity)));
  CHECK(row(rows, "device_failed_mallocs").measured == 1);
  CHECK(api.mem_get_info().free == 448_MiB);
}

TEST_CASE("validation: the table and the CSV files name every metric", "[real_gpu]") {
  HostDeviceApi api(card(false));
  ValidationOptions options;
  options.policy = parse_policy_spec("caching");
  options.cost.malloc_fixed_ns = 1000;
  const Validation validation = validate(api, hand_trace(), options);
  const std::vector<MetricComparison> rows = compare(validation);
  std::ostringstream table;
  write_comparison_table(table, validation, rows);
  std::ostringstream csv;
  write_comparison_csv(csv, validation, rows);
  std::ostringstream calls;
  write_calls_csv(calls, validation);
  CHECK_THAT(csv.str(), Catch::StartsWith(
                            "workload,policy,backend,device,capacity_bytes,metric,target,simulated,measured,difference,agrees,"
                            "informative\n"));
  for (const MetricComparison& comparison : rows) {
    CHECK_THAT(table.str(), Catch::Contains(comparison.metric));
    CHECK_THAT(csv.str(), Catch::Contains("," + comparison.metric + ","));
  }
  CHECK_THAT(table.str(), Catch::Contains("exact metrics agree"));
  CHECK_THAT(csv.str(), Catch::Contains("malloc_ns_mean,ratio,"));
  CHECK_THAT(csv.str(), Catch::Contains(",device_used_peak_bytes,exact,23068672,23068672,0,yes,yes\n"));
  CHECK_THAT(csv.str(), Catch::Contains(",oom_count,exact,0,0,0,yes,no\n"));
  CHECK_THAT(calls.str(), Catch::StartsWith("index,op,bytes,measured_ns,simulated_ns\n0,malloc,"));
  // The cost model's price for the first call: 1000 ns fixed + 1e-4 ns per byte.
  const DeviceCall& first = validation.calls.front();
  CHECK_THAT(calls.str(), Catch::Contains("," + std::to_string(first.bytes) + "," + std::to_string(first.ns) + "," +
                                          std::to_string(1000 + (first.bytes + 5000) / 10000) + "\n"));
}

TEST_CASE("validation: rows equal by construction are not informative; what could differ is", "[real_gpu]") {
  HostDeviceApi api(card(true));
  ValidationOptions options;
  const auto informative = [](const std::vector<MetricComparison>& rows, std::string_view metric) {
    return row(rows, metric).informative;
  };
  SECTION("uncapped direct: one trace, one policy, segments it never tells apart") {
    options.policy = parse_policy_spec("direct");
    const std::vector<MetricComparison> rows = compare(validate(api, hand_trace(), options));
    CHECK(informative(rows, "device_used_peak_bytes"));  // the driver's own count
    for (const char* metric : {"events_replayed", "peak_allocated_bytes", "peak_reserved_bytes", "device_mallocs",
                               "device_frees", "device_failed_mallocs", "oom_count", "first_oom_event"}) {
      INFO(metric);
      CHECK_FALSE(informative(rows, metric));
    }
  }
  SECTION("uncapped caching: placement by address can change what it reserves") {
    options.policy = parse_policy_spec("caching");
    const std::vector<MetricComparison> rows = compare(validate(api, hand_trace(), options));
    CHECK(informative(rows, "peak_reserved_bytes"));
    CHECK(informative(rows, "device_mallocs"));
    CHECK_FALSE(informative(rows, "oom_count"));
  }
  SECTION("capped: the OOM is a real comparison") {
    options.policy = parse_policy_spec("direct");
    options.device.cap = 128_MiB;
    TraceBuilder builder(TraceInfo{"oom", "test"});
    builder.alloc(0, 3_MiB);
    builder.alloc(1, 200_MiB);  // more than the capped card has
    const std::vector<MetricComparison> rows =
        compare(validate(api, std::make_shared<const Trace>(std::move(builder).finish()), options));
    for (const char* metric : {"events_replayed", "peak_reserved_bytes", "oom_count", "first_oom_event",
                               "first_oom_bytes", "first_oom_kind"}) {
      INFO(metric);
      CHECK(informative(rows, metric));
    }
    CHECK(row(rows, "oom_count").measured == 1);
    require_exact_agreement(rows);
  }
}

TEST_CASE("validation: options without a policy read are an error before the device is touched", "[real_gpu]") {
  HostDeviceApi api(card(true));
  CHECK_THROWS_WITH(validate(api, hand_trace(), ValidationOptions{}), "validation needs a policy");
  CHECK(api.live_allocations() == 0);
}

TEST_CASE("validation: which policies place blocks by address", "[real_gpu]") {
  const auto places_by_address = [](const char* spec) { return parse_policy_spec(spec).segments.places_by_address; };
  for (const char* spec : {"caching", "torch", "caching:max_split_size=256MiB", "expandable", "growth", "jax-growth",
                           "bfc:growth=true"}) {
    INFO(spec);
    CHECK(places_by_address(spec));
  }
  for (const char* spec : {"bfc", "jax", "direct", "vmm", "buddy", "bestfit:region=1GiB", "bfc:growth=false", "growth:growth=false"}) {
    INFO(spec);
    CHECK_FALSE(places_by_address(spec));
  }
}

TEST_CASE("validation: which policies map pages, as their settings say", "[real_gpu]") {
  const auto page_mapped = [](const char* spec) { return parse_policy_spec(spec).segments.page_mapped; };
  for (const char* spec : {"vmm", "vmm:page=4MiB", "expandable", "caching:expandable_segments=true",
                           "caching:conf=expandable_segments:True"}) {
    INFO(spec);
    CHECK(page_mapped(spec));
  }
  for (const char* spec : {"caching", "torch", "expandable:expandable_segments=false", "growth", "direct", "bestfit"}) {
    INFO(spec);
    CHECK_FALSE(page_mapped(spec));
  }
}

}  // namespace
}  // namespace allocsim
