// A Gaussian-process regression and its expected improvement: the model
// behind AutoSwap's Bayesian optimisation of the weights of equation (3)
// (SmartPool/AutoSwap §IV-C: "Gaussian Process prior is chosen [42]"; [42] is
// Snoek, Larochelle and Adams, "Practical Bayesian optimization of machine
// learning algorithms", whose Matérn 5/2 kernel and expected improvement
// are used here). Private to the plan layer's -inl files (and the tests).
//
// Fixed hyperparameters, no marginal-likelihood fit: ~30 observations of a
// piecewise-constant objective (a plan changes only when the ranking does)
// would fit them poorly, and a fixed model keeps the search deterministic
// and cheap. The observations are standardised (prior mean their mean,
// prior scale their deviation), so the unit-variance kernel fits any scale
// of objective; `noise` is a jitter on the standardised diagonal that keeps
// the Cholesky factor defined when two samples coincide.
#pragma once

#include <Eigen/Cholesky>
#include <Eigen/Core>

#include <algorithm>
#include <cmath>
#include <numbers>
#include <stdexcept>
#include <string>
#include <utility>

namespace cachedarrays::plan::detail {

struct GaussianProcessOptions {
  double length_scale = 0.5;  // in the inputs' units
  double noise = 1e-6;        // variance added to the diagonal, standardised units
};

// Matérn 5/2 of unit variance at distance r (Rasmussen and Williams,
// "Gaussian Processes for Machine Learning", eq. 4.17).
inline double matern52(double r, double length_scale) {
  const double s = std::sqrt(5.0) * r / length_scale;
  return (1 + s + s * s / 3) * std::exp(-s);
}

class GaussianProcess {
 public:
  struct Posterior {
    double mean = 0;
    double variance = 0;  // of the latent function, the objective's units squared
  };

  // x: one observed input per row; y: the objective there. At least one row.
  GaussianProcess(Eigen::MatrixXd x, const Eigen::VectorXd& y, GaussianProcessOptions options = {})
      : x_(std::move(x)), options_(options) {
    const Eigen::Index n = x_.rows();
    if (n < 1 || y.size() != n) {
      throw std::logic_error("GaussianProcess: " + std::to_string(n) + " inputs and " + std::to_string(y.size()) +
                             " observations; give one observation per input, at least one");
    }
    offset_ = y.mean();
    const double deviation = std::sqrt((y.array() - offset_).square().mean());
    scale_ = deviation > 0 && std::isfinite(deviation) ? deviation : 1.0;
    Eigen::MatrixXd k(n, n);
    for (Eigen::Index i = 0; i < n; ++i) {
      for (Eigen::Index j = 0; j <= i; ++j) k(i, j) = k(j, i) = kernel(x_.row(i), x_.row(j));
      k(i, i) += options_.noise;
    }
    llt_.compute(k);
    if (llt_.info() != Eigen::Success) {
      throw std::logic_error("GaussianProcess: the kernel matrix of " + std::to_string(n) +
                             " inputs is not positive definite; raise the noise (" + std::to_string(options_.noise) +
                             ")");
    }
    alpha_ = llt_.solve(((y.array() - offset_) / scale_).matrix());
  }

  // The posterior at input x (a row of the inputs' width).
  [[nodiscard]] Posterior predict(const Eigen::RowVectorXd& x) const {
    Eigen::VectorXd k_star(x_.rows());
    for (Eigen::Index i = 0; i < x_.rows(); ++i) k_star(i) = kernel(x, x_.row(i));
    Posterior p;
    p.mean = offset_ + scale_ * k_star.dot(alpha_);
    // k(x, x) - k*^T K^-1 k*, with K = L L^T: the squared norm of L^-1 k*.
    const Eigen::VectorXd v = llt_.matrixL().solve(k_star);
    p.variance = std::max(0.0, 1.0 - v.squaredNorm()) * scale_ * scale_;
    return p;
  }

  [[nodiscard]] Eigen::Index size() const noexcept { return x_.rows(); }

 private:
  [[nodiscard]] double kernel(const Eigen::RowVectorXd& a, const Eigen::RowVectorXd& b) const {
    return matern52((a - b).norm(), options_.length_scale);
  }

  Eigen::MatrixXd x_;
  GaussianProcessOptions options_;
  double offset_ = 0;
  double scale_ = 1;
  Eigen::LLT<Eigen::MatrixXd> llt_;
  Eigen::VectorXd alpha_;
};

// Expected improvement below `best` (a minimisation) at a posterior, by at
// least `xi` (Snoek et al. eq. 2 with the sign turned for a minimum):
// (best - mean - xi) Phi(z) + sigma phi(z), z = (best - mean - xi) / sigma;
// where sigma is 0, the improvement itself.
inline double expected_improvement(const GaussianProcess::Posterior& p, double best, double xi) {
  const double gain = best - p.mean - xi;
  const double sigma = std::sqrt(p.variance);
  if (!(sigma > 1e-300)) return std::max(gain, 0.0);
  const double z = gain / sigma;
  const double cdf = 0.5 * std::erfc(-z / std::sqrt(2.0));
  const double pdf = std::exp(-0.5 * z * z) / std::sqrt(2.0 * std::numbers::pi);
  return gain * cdf + sigma * pdf;
}

}  // namespace cachedarrays::plan::detail
