// The data of a sweep's HTML page (report_page draws it): peak reserved and allocated
// bytes against the batch, one curve per policy, the device's capacity as a line and each
// policy's largest batch that fits marked; one small chart per facet (precision, device,
// or any other parameter the sweep varied). Made from a sweep's CSV or a maxbatch study.
#pragma once

#include <cstdint>
#include <istream>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sim/units.hpp"
#include "studies/maxbatch_study.hpp"

namespace allocsim {

struct BatchPoint {
  std::int64_t x = 0;  // the batch (or the swept axis the page names)
  Bytes peak_allocated = 0;
  Bytes peak_reserved = 0;
  bool fits = false;
};

struct BatchCurve {
  std::string policy;
  std::vector<BatchPoint> points;  // ascending x
  std::optional<std::int64_t> largest;  // the largest x that fits
};

struct BatchFacet {
  std::string name;  // "precision=amp, capacity_bytes=16 GiB"; "" when the sweep has one facet
  Bytes capacity = 0;
  std::vector<BatchCurve> curves;  // in order of first appearance
};

struct BatchReport {
  std::string x_axis = "batch";
  std::vector<BatchFacet> facets;
};

// From the CSV `allocsim sweep` writes (its first tenant's rows). The x axis is the batch
// when it varies, else the first other model axis that does (sequence), else the point.
// Facets: every parameter column that varies, other than the x axis and the policy.
// Error naming `name` when a column the page needs is missing.
BatchReport batch_report_from_sweep(std::istream& csv, const std::string& name);

// From a maxbatch study: a facet per device and variant, every batch each search tried.
BatchReport batch_report_from_maxbatch(const MaxBatchResults& results);

// The JSON document of the page; each facet's capacity under the run metric's name,
// capacity_bytes (with "text" and "brief" as columns_json gives them).
std::string batch_report_data(std::string_view title, std::string_view command, const BatchReport& report);

}  // namespace allocsim
