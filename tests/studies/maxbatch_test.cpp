// The largest-batch search on synthetic workloads whose answer is known: each batch's
// trace is built here and replayed through the engine, so the search sees real OOMs.
#include <cmath>
#include <set>
#include <sstream>

#include <catch2/catch.hpp>

#include "policies/registry.hpp"
#include "app/cli.hpp"
#include "studies/maxbatch.hpp"
#include "studies/maxbatch_study.hpp"
#include "sim/device_presets.hpp"
#include "sim/engine.hpp"
#include "sim/error.hpp"
#include "sim/trace.hpp"

namespace allocsim {
namespace {

// `batch` live tensors of 1 MiB, plus `extra` more at the bad batches; then all freed.
std::shared_ptr<const Trace> synthetic(std::int64_t batch, Bytes extra) {
  TraceBuilder builder({"synthetic_b" + std::to_string(batch), "test"});
  std::vector<AllocId> ids;
  Nanos now = 0;
  for (std::int64_t i = 0; i < batch; ++i) ids.push_back(builder.alloc(now++, 1_MiB));
  if (extra > 0) ids.push_back(builder.alloc(now++, extra));
  for (AllocId id : ids) builder.free(now++, id);
  return std::make_shared<const Trace>(std::move(builder).finish());
}

// Runs on a 10 MiB device charged to the byte through `direct`: batch b fits iff b <= 10,
// except the batches in `bad`, which ask for 100 MiB more.
BatchRunner runner(std::set<std::int64_t> bad, int* runs = nullptr) {
  return [bad, runs](std::int64_t batch) {
    if (runs) ++*runs;
    Scenario scenario;
    scenario.device.capacity = 10_MiB;
    scenario.tenants.push_back(TenantSpec{synthetic(batch, bad.contains(batch) ? 100_MiB : 0), policy_maker("direct"), 0});
    const RunResult result = run(scenario);
    const TenantResult& tenant = result.tenants.front();
    BatchProbe probe;
    probe.batch = batch;
    probe.fits = tenant.oom_count == 0;
    probe.peak_allocated = tenant.peak_allocated;
    probe.peak_reserved = tenant.peak_reserved;
    return probe;
  };
}

bool tried(const MaxBatch& found, std::int64_t batch) {
  for (const BatchProbe& probe : found.probes) {
    if (probe.batch == batch) return true;
  }
  return false;
}

TEST_CASE("maxbatch: monotone, the answer and its neighbours", "[maxbatch]") {
  int runs = 0;
  const MaxBatch found = find_max_batch(runner({}, &runs), 1000, 2);
  REQUIRE(found.largest == 10);
  CHECK(found.monotone);
  CHECK_FALSE(found.capped);
  CHECK(found.at_largest()->peak_allocated == 10_MiB);
  // 1 2 4 8 16, bisect 12 10 11, above 12 (known) 13, below 9 8 (known): 10 runs, each batch once.
  CHECK(runs == static_cast<int>(found.probes.size()));
  CHECK(tried(found, 9));
  CHECK(tried(found, 13));
  for (std::size_t i = 1; i < found.probes.size(); ++i) CHECK(found.probes[i - 1].batch < found.probes[i].batch);
}

TEST_CASE("maxbatch: an OOM just below the answer is not monotone", "[maxbatch]") {
  const MaxBatch found = find_max_batch(runner({9}), 1000, 2);
  CHECK(found.largest == 10);
  CHECK_FALSE(found.monotone);
  CHECK(found.evidence == "batch 9 runs out of memory though 10 fits");
}

TEST_CASE("maxbatch: a fit above the first OOM restarts the search", "[maxbatch]") {
  // 1 2 4 fit, 8 fails, 6 7 fit; 9 fits above the failure, so the search goes on to 10.
  const MaxBatch found = find_max_batch(runner({8}), 1000, 4);
  CHECK(found.largest == 10);
  CHECK_FALSE(found.monotone);
  CHECK(found.evidence == "batch 8 runs out of memory though 10 fits");
  // Without neighbours the search stops at the first failure's edge, and says it is monotone.
  const MaxBatch blind = find_max_batch(runner({8}), 1000, 0);
  CHECK(blind.largest == 7);
  CHECK(blind.monotone);
}

TEST_CASE("maxbatch: the limit caps the search, and nothing may fit", "[maxbatch]") {
  const MaxBatch capped = find_max_batch(runner({}), 6, 2);
  CHECK(capped.largest == 6);
  CHECK(capped.capped);
  const MaxBatch limit_one = find_max_batch(runner({}), 1, 2);
  CHECK(limit_one.largest == 1);
  CHECK(limit_one.capped);
  const MaxBatch none = find_max_batch(runner({1, 2, 3, 4, 5, 6, 7, 8, 9, 10}), 1000, 2);
  CHECK_FALSE(none.largest);
  CHECK(none.at_largest() == nullptr);
  // Batch 1 fails but 2 fits: found above the failure.
  const MaxBatch late = find_max_batch(runner({1}), 1000, 2);
  CHECK(late.largest == 10);
  CHECK_FALSE(late.monotone);
}

TEST_CASE("maxbatch: the least-squares line through the peaks", "[maxbatch]") {
  std::vector<BatchProbe> probes(4);
  const Bytes peaks[] = {1, 3, 2, 1000};
  for (int i = 0; i < 4; ++i) {
    probes[i].batch = i + 1;
    probes[i].peak_allocated = peaks[i];
    probes[i].fits = i < 3;  // the OOM's peak is left out
  }
  // x 1 2 3, y 1 3 2: slope 0.5, intercept 1, residuals -0.5 1 -0.5.
  const auto fit = fit_peak(probes, &BatchProbe::peak_allocated);
  REQUIRE(fit);
  CHECK(fit->points == 3);
  CHECK(fit->slope == Approx(0.5));
  CHECK(fit->intercept == Approx(1.0));
  CHECK(fit->rms_residual == Approx(std::sqrt(0.5)));
  probes[1].fits = probes[2].fits = false;
  CHECK_FALSE(fit_peak(probes, &BatchProbe::peak_allocated));
}

TEST_CASE("maxbatch: the command's answer fits and the next batch does not", "[maxbatch][cli]") {
  const auto cli = [](std::vector<std::string> args) {
    std::ostringstream out, err;
    const int status = run_cli(args, out, err);
    return std::make_pair(status, out.str() + err.str());
  };
  const auto [status, text] =
      cli({"maxbatch", "--workload", "seed_cnn", "--policy", "direct,caching", "--capacity", "256MiB", "--threads", "2"});
  REQUIRE(status == 0);
  INFO(text);
  CHECK_THAT(text, Catch::Contains("policy direct: largest batch ") && Catch::Contains("policy caching: largest batch ") &&
                       Catch::Contains("fit over") && Catch::Contains("with amp: largest batch") &&
                       Catch::Contains("per optimizer step"));
  const auto at = text.find("policy direct: largest batch ") + std::string("policy direct: largest batch ").size();
  const std::string batch = text.substr(at, text.find_first_not_of("0123456789", at) - at);
  const auto ooms = [&](const std::string& b) {
    const std::string out = cli({"run", "--workload", "seed_cnn", "--batch", b, "--policy", "direct", "--capacity", "256MiB"}).second;
    return out.find("OOM at event") != std::string::npos;
  };
  CHECK_FALSE(ooms(batch));
  CHECK(ooms(std::to_string(std::stoll(batch) + 1)));
  CHECK(cli({"maxbatch", "--workload", "random", "--policy", "direct"}).first == 2);
  CHECK(cli({"maxbatch", "--workload", "seed_cnn", "--policy", "nosuch"}).first == 2);
}

// A small study of 6 searches (2 policies x as given, amp, acc4) on a 256 MiB device.
MaxBatchStudy small_study() {
  MaxBatchStudy study;
  study.workload = parse_workload_spec("seed_cnn");
  study.policies = {policy_maker("direct"), policy_maker("bestfit")};
  study.devices = {DeviceSpec{}};
  study.devices.front().capacity = 256_MiB;
  study.limit = 512;
  study.threads = 1;
  return study;
}

std::string maxbatch_csv(const MaxBatchResults& results) {
  std::ostringstream out;
  write_maxbatch_csv(out, results);
  return out.str();
}

std::vector<std::string> csv_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

TEST_CASE("maxbatch: resumed from the CSV of a stopped study, the same bytes as one never stopped", "[maxbatch][resume]") {
  MaxBatchStudy study = small_study();
  const std::string expected = maxbatch_csv(run_maxbatch(study));
  const std::vector<std::string> lines = csv_lines(expected);
  REQUIRE(lines.size() == 1 + 6);

  // Stopped after two searches: the CSV the interrupted command writes.
  std::size_t asked = 0;
  study.stop = [&] { return ++asked > 2; };
  MaxBatchResults stopped = run_maxbatch(study);
  study.stop = {};
  std::erase_if(stopped.rows, [](const MaxBatchRow& row) { return !row.done(); });
  REQUIRE(stopped.rows.size() == 2);

  MaxBatchResults resumed = plan_maxbatch(study);
  std::istringstream in(maxbatch_csv(stopped));
  CHECK(read_maxbatch_csv(in, resumed, "stopped.csv") == 2);
  search_maxbatch(study, resumed);
  for (std::size_t i = 0; i < resumed.rows.size(); ++i) {
    INFO(i);
    CHECK(resumed.rows[i].kept.empty() == (i >= 2));
    CHECK(resumed.rows[i].searched == (i >= 2));  // a kept search is not run again
  }
  CHECK(maxbatch_csv(resumed) == expected);

  // Rows out of order come back in study order, kept as written (not searched again:
  // a changed cell stays), and a cut last line is searched again.
  std::string edited = lines[3];
  edited.replace(edited.rfind(','), std::string::npos, ",999");  // batches_tried
  const std::string file = lines[0] + "\n" + lines[5] + "\n" + edited + "\n" + lines[1].substr(0, 10);
  MaxBatchResults shuffled = plan_maxbatch(study);
  std::istringstream shuffled_in(file);
  CHECK(read_maxbatch_csv(shuffled_in, shuffled, "shuffled.csv") == 2);
  search_maxbatch(study, shuffled);
  std::vector<std::string> want = lines;
  want[3] = edited;
  CHECK(csv_lines(maxbatch_csv(shuffled)) == want);
}

TEST_CASE("maxbatch: --resume reads only a maxbatch CSV of this study", "[maxbatch][resume]") {
  const MaxBatchStudy study = small_study();
  const auto refusal = [&](const std::string& text) {
    MaxBatchResults results = plan_maxbatch(study);
    std::istringstream in(text);
    try {
      read_maxbatch_csv(in, results, "other.csv");
    } catch (const Error& error) {
      return std::string(error.what());
    }
    return std::string();
  };
  std::string header = maxbatch_csv(plan_maxbatch(study));
  header = header.substr(0, header.find('\n') + 1);
  CHECK(refusal("") == "");                        // nothing done yet
  CHECK(refusal(header) == "");
  CHECK(refusal(header.substr(0, 20)) == "");     // cut in its header
  CHECK_THAT(refusal("point,model,batch\n0,seed_cnn,1\n"), Catch::Contains("other.csv was not written by allocsim maxbatch"));
  CHECK_THAT(refusal(header.substr(0, header.size() - 1) + ",more\n"), Catch::Contains("not written by allocsim maxbatch"));

  // The same header, the rows of other searches: another workload, device or policy.
  const auto rows_of = [](MaxBatchStudy other) { return maxbatch_csv(plan_maxbatch(other)); };
  MaxBatchStudy workload = study;
  workload.workload = parse_workload_spec("seed_cnn_steps1");
  CHECK_THAT(refusal(rows_of(workload)), Catch::Contains("other.csv:2: workload seed_cnn_steps1") &&
                                             Catch::Contains("is no search of this maxbatch"));
  MaxBatchStudy device = study;
  device.devices.front().capacity = 512_MiB;
  CHECK_THAT(refusal(rows_of(device)), Catch::Contains("is no search of this maxbatch"));
  MaxBatchStudy policy = study;
  policy.policies = {policy_maker("bestfit"), policy_maker("caching")};
  CHECK_THAT(refusal(rows_of(policy)), Catch::Contains("other.csv:5: workload seed_cnn, device sim, policy caching"));
  CHECK(refusal(rows_of(study)) == "");
}

TEST_CASE("maxbatch: bert_large_adamw's steady-state largest batch is below its first step's", "[maxbatch][steady]") {
  // Issue 14: the first step alone fits batches that fail at iteration 2, once AdamW's
  // moments (2.5 GiB) exist. The default replays both steps; steps1 the first alone.
  const auto largest = [](const std::string& workload) {
    MaxBatchStudy study;
    study.workload = parse_workload_spec(workload);
    study.policies = {policy_maker("caching")};
    study.devices = {device_spec("v100-16gb")};
    study.neighbours = 1;
    study.threads = 2;
    const MaxBatchResults results = run_maxbatch(study);
    REQUIRE(results.rows.front().found.largest);
    return *results.rows.front().found.largest;
  };
  const std::int64_t steady = largest("bert_large_adamw");
  const std::int64_t first = largest("bert_large_adamw_steps1");
  INFO("steady " << steady << ", first step " << first);
  CHECK(steady < first);
}

}  // namespace
}  // namespace allocsim
