#include "studies/maxbatch.hpp"

#include <algorithm>
#include <map>

namespace allocsim {

const BatchProbe* MaxBatch::at_largest() const {
  for (const BatchProbe& probe : probes) {
    if (largest && probe.batch == *largest) return &probe;
  }
  return nullptr;
}

MaxBatch find_max_batch(const BatchRunner& run, std::int64_t limit, int neighbours) {
  std::map<std::int64_t, BatchProbe> tried;
  const auto fits = [&](std::int64_t batch) {
    auto found = tried.find(batch);
    if (found == tried.end()) found = tried.emplace(batch, run(batch)).first;
    return found->second.fits;
  };
  MaxBatch result;
  std::int64_t low = 0;  // the largest batch known to fit, 0 for none
  std::int64_t start = 1;
  while (true) {
    std::optional<std::int64_t> high;  // the smallest batch above `low` known to fail
    for (std::int64_t batch = start; batch <= limit;) {
      if (!fits(batch)) {
        high = batch;
        break;
      }
      low = batch;
      if (batch == limit) break;
      batch = batch > limit / 2 ? limit : batch * 2;
    }
    if (!high) {
      result.capped = low == limit;
      break;
    }
    while (*high - low > 1) {
      const std::int64_t middle = low + (*high - low) / 2;
      (fits(middle) ? low : *high) = middle;
    }
    // Past the first failure: does anything just above fit after all?
    std::optional<std::int64_t> above;
    for (int k = 1; k <= neighbours && *high + k <= limit; ++k) {
      if (fits(*high + k)) {
        above = *high + k;
        break;
      }
    }
    if (!above) break;
    low = *above;
    start = *above;
  }
  for (int k = 1; k <= neighbours && low - k >= 1; ++k) fits(low - k);
  if (low > 0) result.largest = low;
  for (const auto& [batch, probe] : tried) {
    result.probes.push_back(probe);
    if (!probe.fits && batch < low && result.monotone) {
      result.monotone = false;
      result.evidence = "batch " + std::to_string(batch) + " runs out of memory though " + std::to_string(low) + " fits";
    }
  }
  return result;
}

std::optional<LinearFit> fit_peak(std::span<const BatchProbe> probes, Bytes BatchProbe::*peak) {
  std::vector<double> batches;
  std::vector<double> peaks;
  for (const BatchProbe& probe : probes) {
    if (!probe.fits) continue;
    batches.push_back(static_cast<double>(probe.batch));
    peaks.push_back(static_cast<double>(probe.*peak));
  }
  return fit_line(batches, peaks);
}

}  // namespace allocsim
