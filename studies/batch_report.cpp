#include "studies/batch_report.hpp"

#include <algorithm>
#include <charconv>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "sim/error.hpp"
#include "sim/metrics.hpp"
#include "sim/version.hpp"
#include "studies/csv_resume.hpp"
#include "studies/sweep_grid.hpp"

namespace allocsim {
namespace {

using nlohmann::json;

std::optional<std::int64_t> whole_number(const std::string& cell) {
  std::int64_t value = 0;
  const auto [end, error] = std::from_chars(cell.data(), cell.data() + cell.size(), value);
  if (error != std::errc() || end != cell.data() + cell.size()) return std::nullopt;
  return value;
}

Bytes bytes_cell(const std::string& cell) { return static_cast<Bytes>(whole_number(cell).value_or(0)); }

// Curves of one facet, found by policy; points sorted and the largest fit marked at the end.
struct FacetBuilder {
  BatchFacet facet;
  std::map<std::string, std::size_t> by_policy;

  BatchCurve& curve(const std::string& policy) {
    auto [it, added] = by_policy.emplace(policy, facet.curves.size());
    if (added) facet.curves.push_back(BatchCurve{policy, {}, std::nullopt});
    return facet.curves[it->second];
  }
};

void finish(BatchFacet& facet, bool mark_largest) {
  for (BatchCurve& curve : facet.curves) {
    std::stable_sort(curve.points.begin(), curve.points.end(), [](const BatchPoint& a, const BatchPoint& b) { return a.x < b.x; });
    if (!mark_largest) continue;
    for (const BatchPoint& point : curve.points) {
      if (point.fits) curve.largest = point.x;
    }
  }
}

}  // namespace

BatchReport batch_report_from_sweep(std::istream& csv, const std::string& name) {
  std::vector<std::string> header;
  bool complete = true;
  if (!read_csv_record(csv, header, complete)) throw Error(name + ": no sweep CSV to report");
  const auto column = [&](std::string_view wanted) {
    const auto it = std::find(header.begin(), header.end(), wanted);
    if (it == header.end()) throw Error(name + ": no column " + std::string(wanted) + " for the report");
    return static_cast<std::size_t>(it - header.begin());
  };
  const std::size_t tenant_at = column("tenant"), policy_at = column("policy"), point_at = column("point"),
                    allocated_at = column("peak_allocated_bytes"), reserved_at = column("peak_reserved_bytes"),
                    verdict_at = column("verdict"), capacity_at = column("capacity_bytes");
  std::vector<std::vector<std::string>> rows;
  for (std::vector<std::string> cells; read_csv_record(csv, cells, complete);) {
    if (cells.size() != header.size()) throw Error(name + ": a row of " + std::to_string(cells.size()) + " cells under a header of " + std::to_string(header.size()));
    if (cells[tenant_at] == "0") rows.push_back(cells);
  }
  // The parameter columns: the sweep's own, and the device.
  std::vector<std::string> parameters = sweep_columns();
  parameters.erase(std::remove(parameters.begin(), parameters.end(), "point"), parameters.end());
  parameters.insert(parameters.end(), {"device", "capacity_bytes"});
  const auto varies = [&](const std::string& parameter) {
    const std::size_t at = column(parameter);
    std::set<std::string> values;
    for (const auto& row : rows) values.insert(row[at]);
    return values.size() > 1;
  };
  BatchReport report;
  report.x_axis = "point";
  for (const std::string candidate : {"batch", "sequence", "accumulation"}) {
    if (std::find(parameters.begin(), parameters.end(), candidate) != parameters.end() && varies(candidate)) {
      report.x_axis = candidate;
      break;
    }
  }
  std::vector<std::size_t> facet_columns;
  for (const std::string& parameter : parameters) {
    if (parameter != report.x_axis && varies(parameter)) facet_columns.push_back(column(parameter));
  }
  const std::size_t x_at = column(report.x_axis);
  std::vector<FacetBuilder> facets;
  std::map<std::string, std::size_t> facet_index;
  for (const auto& row : rows) {
    std::string facet_name;
    for (const std::size_t at : facet_columns) {
      if (!facet_name.empty()) facet_name += ", ";
      facet_name += header[at] == "capacity_bytes" ? "capacity=" + format_bytes(bytes_cell(row[at])) : header[at] + "=" + row[at];
    }
    auto [it, added] = facet_index.emplace(facet_name, facets.size());
    if (added) facets.push_back(FacetBuilder{BatchFacet{facet_name, bytes_cell(row[capacity_at]), {}}, {}});
    FacetBuilder& facet = facets[it->second];
    const std::optional<std::int64_t> x = whole_number(row[x_at]);
    if (!x) throw Error(name + ": point " + row[point_at] + " has no " + report.x_axis + " to plot against");
    facet.facet.capacity = std::max(facet.facet.capacity, bytes_cell(row[capacity_at]));
    facet.curve(row[policy_at]).points.push_back(
        BatchPoint{*x, bytes_cell(row[allocated_at]), bytes_cell(row[reserved_at]), row[verdict_at] == "fits"});
  }
  for (FacetBuilder& facet : facets) {
    finish(facet.facet, true);
    report.facets.push_back(std::move(facet.facet));
  }
  return report;
}

BatchReport batch_report_from_maxbatch(const MaxBatchResults& results) {
  std::vector<FacetBuilder> facets;
  std::map<std::string, std::size_t> facet_index;
  for (const MaxBatchRow& row : results.rows) {
    const std::string facet_name = row.device.name + ", " + row.variant.name();
    auto [it, added] = facet_index.emplace(facet_name, facets.size());
    if (added) facets.push_back(FacetBuilder{BatchFacet{facet_name, row.device.capacity, {}}, {}});
    BatchCurve& curve = facets[it->second].curve(row.policy.text);
    if (!row.searched) {  // kept from an earlier run's CSV: its answer is known, its batches are not
      if (!row.kept.empty()) curve.largest = whole_number(row.kept.at(maxbatch_column("largest_batch")));
      continue;
    }
    for (const BatchProbe& probe : row.found.probes) {
      curve.points.push_back(BatchPoint{probe.batch, probe.peak_allocated, probe.peak_reserved, probe.fits});
    }
    curve.largest = row.found.largest;
  }
  BatchReport report;
  for (FacetBuilder& facet : facets) {
    finish(facet.facet, false);
    report.facets.push_back(std::move(facet.facet));
  }
  return report;
}

std::string batch_report_data(std::string_view title, std::string_view command, const BatchReport& report) {
  json facets = json::array();
  for (const BatchFacet& facet : report.facets) {
    json curves = json::array();
    for (const BatchCurve& curve : facet.curves) {
      json points = json::array();
      for (const BatchPoint& p : curve.points) points.push_back({p.x, p.peak_allocated, p.peak_reserved, p.fits});
      curves.push_back({{"policy", curve.policy}, {"points", points}, {"largest", curve.largest ? json(*curve.largest) : json(nullptr)}});
    }
    // The device's capacity under the run metric's name, and as its one formatter shows it.
    const json shown = {{"capacity_bytes", format_human(facet.capacity, find_metric("capacity_bytes").unit)}};
    facets.push_back({{"name", facet.name},
                      {"capacity_bytes", facet.capacity},
                      {"text", shown},
                      {"brief", shown},
                      {"curves", curves}});
  }
  const json page = {{"kind", "batch"},  {"title", title},        {"command", command},
                     {"version", allocsim_version()}, {"x_axis", report.x_axis}, {"facets", facets}};
  return page.dump();
}

}  // namespace allocsim
