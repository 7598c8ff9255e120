#include "support/ratio_interval.hpp"

#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/core.h>

namespace cachedarrays::tools {

namespace {

// The continued fraction of the regularized incomplete beta function,
// evaluated by the modified Lentz method (Press et al., Numerical Recipes,
// "Incomplete Beta Function").
double beta_continued_fraction(double a, double b, double x) {
  constexpr double tiny = 1e-300;
  const auto guarded = [](double v) { return std::abs(v) < tiny ? tiny : v; };
  double c = 1;
  double d = 1 / guarded(1 - (a + b) * x / (a + 1));
  double h = d;
  for (int m = 1; m <= 500; ++m) {
    const double m2 = 2.0 * m;
    double aa = m * (b - m) * x / ((a - 1 + m2) * (a + m2));
    d = 1 / guarded(1 + aa * d);
    c = guarded(1 + aa / c);
    h *= d * c;
    aa = -(a + m) * (a + b + m) * x / ((a + m2) * (a + 1 + m2));
    d = 1 / guarded(1 + aa * d);
    c = guarded(1 + aa / c);
    const double step = d * c;
    h *= step;
    if (std::abs(step - 1) < 1e-15) break;
  }
  return h;
}

// I_x(a, b), the regularized incomplete beta function, for 0 <= x <= 1.
double incomplete_beta(double a, double b, double x) {
  if (x <= 0) return 0;
  if (x >= 1) return 1;
  const double front =
      std::exp(std::lgamma(a + b) - std::lgamma(a) - std::lgamma(b) + a * std::log(x) + b * std::log1p(-x));
  // The fraction converges fast on this side of the mean; the other side by symmetry.
  if (x < (a + 1) / (a + b + 2)) return front * beta_continued_fraction(a, b, x) / a;
  return 1 - front * beta_continued_fraction(b, a, 1 - x) / b;
}

// P(T <= t) for Student's t with `df` degrees of freedom, t >= 0.
double t_cdf(double t, double df) { return 1 - 0.5 * incomplete_beta(df / 2, 0.5, df / (df + t * t)); }

}  // namespace

double student_t_quantile(double p, double degrees_of_freedom) {
  if (!(p > 0 && p < 1))
    throw std::invalid_argument(fmt::format("student_t_quantile: p = {}; it must be in (0, 1)", p));
  if (!(degrees_of_freedom > 0) || !std::isfinite(degrees_of_freedom)) {
    throw std::invalid_argument(
        fmt::format("student_t_quantile: {} degrees of freedom; they must be finite and > 0", degrees_of_freedom));
  }
  if (p < 0.5) return -student_t_quantile(1 - p, degrees_of_freedom);
  // Bracket, then bisect: the distribution function grows with t.
  double low = 0, high = 1;
  while (t_cdf(high, degrees_of_freedom) < p) high *= 2;
  for (int i = 0; i < 200 && high - low > 1e-12 * high; ++i) {
    const double mid = (low + high) / 2;
    (t_cdf(mid, degrees_of_freedom) < p ? low : high) = mid;
  }
  return (low + high) / 2;
}

double RatioInterval::relative_half_width() const noexcept { return has_interval() ? std::sqrt(high / low) - 1 : 0.0; }

std::optional<std::size_t> RatioInterval::rounds_for(double within, std::size_t at_most) const {
  if (!has_interval() || !(within > 0)) return std::nullopt;
  const double target = std::log1p(within);
  for (std::size_t n = 2; n <= at_most; ++n) {
    const double half = student_t_quantile((1 + confidence) / 2, static_cast<double>(n - 1)) * log_spread /
                        std::sqrt(static_cast<double>(n));
    if (half < target) return n;
  }
  return std::nullopt;
}

RatioInterval paired_ratio_interval(std::span<const double> ratios, double confidence) {
  if (ratios.empty()) throw std::invalid_argument("paired_ratio_interval: no ratio; give one per round");
  if (!(confidence > 0 && confidence < 1)) {
    throw std::invalid_argument(
        fmt::format("paired_ratio_interval: confidence {}; it must be in (0, 1), e.g. 0.9", confidence));
  }
  std::vector<double> logs;
  for (std::size_t i = 0; i < ratios.size(); ++i) {
    if (!(ratios[i] > 0) || !std::isfinite(ratios[i])) {
      throw std::invalid_argument(
          fmt::format("paired_ratio_interval: ratio {} of round {}; each must be finite and > 0", ratios[i], i));
    }
    logs.push_back(std::log(ratios[i]));
  }
  const auto n = static_cast<double>(logs.size());
  double mean = 0;
  for (double l : logs) mean += l;
  mean /= n;
  RatioInterval out;
  out.confidence = confidence;
  out.rounds = logs.size();
  out.ratio = out.low = out.high = std::exp(mean);
  if (logs.size() < 2) return out;
  double squares = 0;
  for (double l : logs) squares += (l - mean) * (l - mean);
  out.log_spread = std::sqrt(squares / (n - 1));
  const double half = student_t_quantile((1 + confidence) / 2, n - 1) * out.log_spread / std::sqrt(n);
  out.low = std::exp(mean - half);
  out.high = std::exp(mean + half);
  return out;
}

}  // namespace cachedarrays::tools
