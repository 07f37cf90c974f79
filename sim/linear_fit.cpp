#include "sim/linear_fit.hpp"

#include <cmath>

#include <Eigen/Dense>

#include "sim/error.hpp"

namespace allocsim {
namespace {

std::optional<LinearFit> solve(const Eigen::MatrixXd& design, const Eigen::VectorXd& observed, bool intercept) {
  const Eigen::VectorXd coefficients = design.colPivHouseholderQr().solve(observed);
  const Eigen::VectorXd residual = observed - design * coefficients;
  LinearFit fit;
  fit.intercept = intercept ? coefficients(0) : 0;
  fit.slope = coefficients(intercept ? 1 : 0);
  fit.rms_residual = std::sqrt(residual.squaredNorm() / static_cast<double>(observed.size()));
  fit.points = static_cast<std::size_t>(observed.size());
  return fit;
}

Eigen::Index checked_size(std::span<const double> x, std::span<const double> y) {
  if (x.size() != y.size()) throw Error("fit_line: " + std::to_string(x.size()) + " x for " + std::to_string(y.size()) + " y");
  return static_cast<Eigen::Index>(x.size());
}

}  // namespace

std::optional<LinearFit> fit_line(std::span<const double> x, std::span<const double> y) {
  const Eigen::Index n = checked_size(x, y);
  if (n < 2) return std::nullopt;
  Eigen::MatrixXd design(n, 2);
  for (Eigen::Index i = 0; i < n; ++i) {
    design(i, 0) = 1.0;
    design(i, 1) = x[static_cast<std::size_t>(i)];
  }
  return solve(design, Eigen::Map<const Eigen::VectorXd>(y.data(), n), true);
}

std::optional<LinearFit> fit_line_through_origin(std::span<const double> x, std::span<const double> y) {
  const Eigen::Index n = checked_size(x, y);
  if (n < 1) return std::nullopt;
  const Eigen::Map<const Eigen::VectorXd> column(x.data(), n);
  if (column.squaredNorm() == 0) return std::nullopt;
  return solve(Eigen::MatrixXd(column), Eigen::Map<const Eigen::VectorXd>(y.data(), n), false);
}

}  // namespace allocsim
