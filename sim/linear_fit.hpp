// The one least-squares line of allocsim: peak bytes against batch (maxbatch), latency
// against bytes (calibrate).
#pragma once

#include <cstddef>
#include <optional>
#include <span>

namespace allocsim {

struct LinearFit {
  double intercept = 0;
  double slope = 0;
  double rms_residual = 0;  // in y's unit
  std::size_t points = 0;
};

// y ~ intercept + slope * x, by QR with column pivoting (stable when x spans orders of
// magnitude); nullopt with fewer than two points. x and y have the same length.
std::optional<LinearFit> fit_line(std::span<const double> x, std::span<const double> y);

// y ~ slope * x (intercept 0); nullopt without a point or when every x is 0.
std::optional<LinearFit> fit_line_through_origin(std::span<const double> x, std::span<const double> y);

}  // namespace allocsim
