// The data of a sweep's page: a curve per policy, a facet per other varied parameter, the
// largest batch that fits marked; from a sweep's CSV and from a maxbatch study.
#include <map>
#include <sstream>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "sim/error.hpp"
#include "studies/batch_report.hpp"
#include "studies/sweep_grid.hpp"

namespace allocsim {
namespace {

// A sweep CSV with the columns the page reads, every parameter column of a real sweep.
std::string sweep_csv(const std::vector<std::vector<std::string>>& rows) {
  std::vector<std::string> header{"point"};
  for (const std::string& column : sweep_columns()) {
    if (column != "point") header.push_back(column);
  }
  for (const char* column : {"policy", "device", "capacity_bytes", "tenant", "peak_allocated_bytes", "peak_reserved_bytes", "verdict"}) {
    header.push_back(column);
  }
  std::ostringstream out;
  for (std::size_t i = 0; i < header.size(); ++i) out << (i ? "," : "") << header[i];
  out << '\n';
  for (const auto& row : rows) {  // batch, precision, policy, capacity, tenant, allocated, reserved, verdict
    const std::map<std::string, std::string> cells{
        {"batch", row[0]},     {"precision", row[1]}, {"policy", row[2]}, {"capacity_bytes", row[3]},
        {"tenant", row[4]},    {"peak_allocated_bytes", row[5]},       {"peak_reserved_bytes", row[6]},
        {"verdict", row[7]},   {"device", "sim"},     {"point", "0"},    {"model", "resnet50"}};
    for (std::size_t i = 0; i < header.size(); ++i) {
      const auto it = cells.find(header[i]);
      if (i > 0) out << ',';
      if (it == cells.end()) continue;
      const bool quote = it->second.find(',') != std::string::npos;
      if (quote) out << '"';
      out << it->second;
      if (quote) out << '"';
    }
    out << '\n';
  }
  return out.str();
}

TEST_CASE("a sweep's page: a facet per precision, a curve per policy, the largest batch that fits", "[report]") {
  std::istringstream csv(sweep_csv({
      {"4", "fp32", "bfc", "1000", "0", "300", "900", "fits"},
      {"2", "fp32", "bfc", "1000", "0", "150", "900", "fits"},
      {"8", "fp32", "bfc", "1000", "0", "600", "900", "capacity"},
      {"2", "fp32", "bfc:growth=true,limit=1KiB", "1000", "0", "150", "160", "fits"},
      {"4", "fp32", "bfc:growth=true,limit=1KiB", "1000", "0", "300", "320", "fragmentation"},
      {"2", "amp", "bfc", "1000", "0", "90", "900", "fits"},
      {"2", "amp", "bfc", "1000", "1", "999", "999", "capacity"},  // a co-tenant's row: not plotted
  }));
  const BatchReport report = batch_report_from_sweep(csv, "test.csv");
  CHECK(report.x_axis == "batch");
  REQUIRE(report.facets.size() == 2);
  CHECK(report.facets[0].name == "precision=fp32");
  CHECK(report.facets[1].name == "precision=amp");
  CHECK(report.facets[0].capacity == 1000);
  REQUIRE(report.facets[0].curves.size() == 2);
  const BatchCurve& bfc = report.facets[0].curves[0];
  CHECK(bfc.policy == "bfc");
  REQUIRE(bfc.points.size() == 3);
  CHECK(bfc.points[0].x == 2);  // sorted by batch
  CHECK(bfc.points[2].x == 8);
  CHECK(!bfc.points[2].fits);
  CHECK(bfc.largest == 4);
  CHECK(report.facets[0].curves[1].policy == "bfc:growth=true,limit=1KiB");
  CHECK(report.facets[0].curves[1].largest == 2);
  REQUIRE(report.facets[1].curves.size() == 1);
  CHECK(report.facets[1].curves[0].points.size() == 1);
  const auto data = nlohmann::json::parse(batch_report_data("t", "sweep", report));
  CHECK(data["facets"][0]["curves"][0]["largest"] == 4);
  CHECK(data["facets"][0]["curves"][0]["points"][1] == nlohmann::json::array({4, 300, 900, true}));
}

TEST_CASE("a sweep that fits nowhere marks no largest batch", "[report]") {
  std::istringstream csv(sweep_csv({{"1", "fp32", "direct", "10", "0", "30", "30", "capacity"},
                                    {"2", "fp32", "direct", "10", "0", "60", "60", "capacity"}}));
  const BatchReport report = batch_report_from_sweep(csv, "test.csv");
  REQUIRE(report.facets.size() == 1);
  CHECK(report.facets[0].name.empty());
  CHECK(!report.facets[0].curves[0].largest);
}

TEST_CASE("a CSV without a column the page needs is refused, naming it", "[report]") {
  std::istringstream csv("point,batch\n0,1\n");
  CHECK_THROWS_WITH(batch_report_from_sweep(csv, "other.csv"), Catch::Contains("other.csv") && Catch::Contains("tenant"));
}

TEST_CASE("a maxbatch page: a facet per device and variant, every batch tried", "[report]") {
  MaxBatchResults results;
  results.variants = {BatchVariant{}};
  DeviceSpec device;
  device.name = "t4";
  device.capacity = 16_GiB;
  MaxBatch found;
  found.largest = 3;
  found.probes = {BatchProbe{4, false, 0, 40, 50, 0, "capacity"}, BatchProbe{1, true, 0, 10, 20, 0, ""},
                  BatchProbe{3, true, 0, 30, 40, 0, ""}};
  results.rows.push_back(MaxBatchRow{"resnet50", device, policy_maker("bfc"), BatchVariant{}, found, true, {}});
  const BatchReport report = batch_report_from_maxbatch(results);
  REQUIRE(report.facets.size() == 1);
  CHECK(report.facets[0].name == "t4, as given");
  CHECK(report.facets[0].capacity == 16_GiB);
  const BatchCurve& curve = report.facets[0].curves.at(0);
  CHECK(curve.largest == 3);
  REQUIRE(curve.points.size() == 3);
  CHECK(curve.points[0].x == 1);
  CHECK(curve.points[2].x == 4);
  CHECK(curve.points[2].peak_reserved == 50);
}

}  // namespace
}  // namespace allocsim
