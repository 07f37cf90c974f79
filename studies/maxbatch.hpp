// The largest batch that runs without OOM. Memory grows with the batch, but an OOM need
// not be monotone in it: a larger batch can pack better than a smaller one. The search
// doubles until the first failure, bisects, then checks `neighbours` batches on each
// side of the answer; a failure below it or a success above it marks the result not
// monotone (a success above restarts the search from there).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "sim/linear_fit.hpp"
#include "sim/units.hpp"

namespace allocsim {

struct BatchProbe {
  std::int64_t batch = 0;
  bool fits = false;              // the whole trace ran: no OOM, no hang
  Bytes peak_requested = 0;
  Bytes peak_allocated = 0;
  Bytes peak_reserved = 0;
  double fragmentation = 0;       // at the peak
  std::string failure;            // OOM kind or "hang", when it did not fit
};

struct MaxBatch {
  std::optional<std::int64_t> largest;  // none: not even batch 1 fits
  bool capped = false;                  // `limit` itself fits: the answer may be larger
  bool monotone = true;
  std::string evidence;                 // when not monotone: "batch 5 fails though 6 fits"
  std::vector<BatchProbe> probes;       // every batch tried, ascending
  const BatchProbe* at_largest() const;
};

using BatchRunner = std::function<BatchProbe(std::int64_t batch)>;

MaxBatch find_max_batch(const BatchRunner& run, std::int64_t limit, int neighbours = 4);

// Least squares: bytes ~ intercept + slope * batch over the probes that fit.
std::optional<LinearFit> fit_peak(std::span<const BatchProbe> probes, Bytes BatchProbe::*peak);

}  // namespace allocsim
