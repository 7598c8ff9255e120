// A ratio of two timings measured on a noisy machine (docs/benchmarks.md
// "Ratios on a noisy machine"): the runs are interleaved in rounds, each
// round times both, and the ratio is paired within its round, so that a
// disturbance that slows a whole round cancels. Over the rounds the ratios
// are treated as log-normal: their geometric mean is the estimate, and the
// Student t interval of the mean of their logarithms, taken back, is the
// interval (a ratio and its inverse get mirrored intervals).
#pragma once

#include <cstddef>
#include <optional>
#include <span>

namespace cachedarrays::tools {

/// A paired ratio over rounds with its confidence interval.
struct RatioInterval {
  double ratio = 0;         ///< the geometric mean of the rounds' ratios
  double low = 0;           ///< the interval's lower end (= ratio for one round)
  double high = 0;          ///< the interval's upper end (= ratio for one round)
  double confidence = 0.9;  ///< the interval's confidence, in (0, 1)
  std::size_t rounds = 0;   ///< the ratios it is taken over
  double log_spread = 0;    ///< the standard deviation of the ratios' logarithms (0 for one round)

  /// An interval needs two rounds at least; one round gives a ratio alone.
  [[nodiscard]] bool has_interval() const noexcept { return rounds >= 2; }
  /// The half width of the interval in relative terms: 0.03 for ratio x
  /// [1/1.03, 1.03] around it. 0 for one round.
  [[nodiscard]] double relative_half_width() const noexcept;
  /// How many rounds, at this spread of the logarithms, would make the
  /// interval narrower than ratio x (1 +- `within`) (within > 0, e.g. 0.03);
  /// empty for one round (no spread known) or more than `at_most` rounds.
  [[nodiscard]] std::optional<std::size_t> rounds_for(double within, std::size_t at_most = 1000) const;
};

/// The interval of `ratios` (one per round, each > 0 and finite) at
/// `confidence` (in (0, 1)). Throws std::invalid_argument, saying what was
/// wrong, for no ratio, a ratio not > 0 or not finite, or a confidence
/// outside (0, 1).
[[nodiscard]] RatioInterval paired_ratio_interval(std::span<const double> ratios, double confidence = 0.9);

/// The `p` quantile (0 < p < 1) of Student's t distribution with
/// `degrees_of_freedom` (> 0): the value below which a share p of it lies.
/// Throws std::invalid_argument outside those ranges.
[[nodiscard]] double student_t_quantile(double p, double degrees_of_freedom);

}  // namespace cachedarrays::tools
