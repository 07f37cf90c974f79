// A study's table (what Python's DataFrame is made of) holds the cells its CSV holds: the
// same header, and each row's cells joined as RFC 4180 joins them give the CSV's line.
#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "policies/registry.hpp"
#include "sim/report.hpp"
#include "studies/compare.hpp"
#include "studies/study_table.hpp"
#include "studies/sweep_run.hpp"
#include "workloads/catalogue.hpp"

namespace allocsim {
namespace {

std::string csv_of(const StudyTable& table) {
  std::ostringstream out;
  write_study_csv(out, table);
  return out.str();
}

TEST_CASE("study table: compare's rows are run --csv's cells, a policy statistic left empty where a policy has none",
          "[compare]") {
  CompareOptions options;
  options.workload = "random:n=400,seed=3";
  options.policies = {"bfc,caching", "bestfit"};
  options.device.capacities = "1GiB";
  const Comparison comparison = run_compare(compare_study(options));
  const StudyTable table = compare_table(comparison.runs);
  REQUIRE(table.rows.size() == 3);
  for (const std::vector<std::string>& row : table.rows) CHECK(row.size() == table.columns.size());
  std::ostringstream expected;
  write_csv(expected, comparison.runs);
  CHECK(csv_of(table) == expected.str());
  // bestfit keeps no statistic of caching's: its cells there are empty, not zero.
  const auto column = std::find(table.columns.begin(), table.columns.end(), "segments_cached") - table.columns.begin();
  if (column < static_cast<std::ptrdiff_t>(table.columns.size())) CHECK(table.rows[2][static_cast<std::size_t>(column)].empty());
}

TEST_CASE("study table: a policy made in code reaches a comparison under its own name", "[compare]") {
  CompareOptions options;
  options.workload = "random:n=200,seed=1";
  options.policies = {"mine,bfc"};
  options.given_policies = {PolicyMaker{"mine", parse_policy_spec("bestfit").make}};
  const Comparison comparison = run_compare(compare_study(options));
  REQUIRE(comparison.policies == std::vector<std::string>{"mine", "bfc"});
  options.given_policies.clear();
  CHECK_THROWS_WITH(compare_study(options), Catch::Contains("mine"));
}

TEST_CASE("study table: a sweep run whole is the CSV the command writes, rows in point order", "[sweep]") {
  SweepStudy study;
  study.grid.workloads = {"random:n=300"};
  study.grid.params = {"seed=1:3:1"};
  study.grid.policies = {"bfc,caching"};
  study.threads = 2;
  const SweepOutcome outcome = run_sweep(study);
  CHECK(outcome.points == 6);
  CHECK(outcome.finished == 6);
  REQUIRE(outcome.table.rows.size() == 6);
  for (std::size_t i = 0; i < outcome.table.rows.size(); ++i) CHECK(outcome.table.rows[i].front() == std::to_string(i));
  const std::vector<SweepPoint> points = expand_sweep(study.grid);
  std::vector<std::size_t> todo{0, 1, 2, 3, 4, 5};
  std::ostringstream expected;
  write_sweep_csv(expected, false, probe_extra_columns(points),
                  run_sweep_points(points, todo, 1, false, [](std::size_t, std::span<const SweepRow>) {}));
  CHECK(csv_of(outcome.table) == expected.str());
}

TEST_CASE("study table: a sweep stopped before it starts has no rows and says so", "[sweep]") {
  SweepStudy study;
  study.grid.workloads = {"random:n=300"};
  study.grid.policies = {"bfc"};
  study.stop = [] { return true; };
  const SweepOutcome outcome = run_sweep(study);
  CHECK(outcome.points == 1);
  CHECK(outcome.finished == 0);
  CHECK(outcome.table.rows.empty());
  CHECK_FALSE(outcome.table.columns.empty());
}

}  // namespace
}  // namespace allocsim
