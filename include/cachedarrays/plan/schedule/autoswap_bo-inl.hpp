// Implementation of autoswap_bo.hpp (header-only mode includes it from
// there; the compiled library from src/plan/plan.cpp).
#pragma once

#include "cachedarrays/config.hpp"
#include "cachedarrays/plan/schedule/autoswap_bo.hpp"

#include <fmt/format.h>

#include <Eigen/Core>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "cachedarrays/error.hpp"
#include "cachedarrays/plan/detail/gaussian_process.hpp"
#include "cachedarrays/plan/schedule/autoswap.hpp"

namespace cachedarrays::plan {

CACHEDARRAYS_INLINE const char* to_string(AutoswapBoSource source) noexcept {
  switch (source) {
    case AutoswapBoSource::single_score: return "single score";
    case AutoswapBoSource::random: return "random";
    case AutoswapBoSource::expected_improvement: return "expected improvement";
  }
  return "?";
}

namespace detail {

CACHEDARRAYS_INLINE void autoswap_bo_check(const AutoswapBoOptions& o) {
  const auto fail = [](const std::string& what, const std::string& allowed) {
    throw invalid_argument("autoswap_optimise_weights: " + what + "; allowed: " + allowed);
  };
  if (o.evaluations < 4) {
    fail("evaluations = " + std::to_string(o.evaluations),
         ">= 4 (the four single scores of §IV-B are evaluated first; the paper's §IV-C takes about 30)");
  }
  if (o.initial_random < 0) fail("initial_random = " + std::to_string(o.initial_random), ">= 0");
  if (o.acquisition_samples < 1) fail("acquisition_samples = " + std::to_string(o.acquisition_samples), ">= 1");
  const auto positive = [](double v) { return v > 0 && std::isfinite(v); };
  const auto non_negative = [](double v) { return v >= 0 && std::isfinite(v); };
  if (!positive(o.length_scale)) fail("length_scale = " + std::to_string(o.length_scale), "finite and > 0");
  if (!positive(o.noise)) fail("noise = " + std::to_string(o.noise), "finite and > 0");
  if (!non_negative(o.xi)) fail("xi = " + std::to_string(o.xi), "finite and >= 0");
  if (!non_negative(o.excess_penalty)) {
    fail("excess_penalty = " + std::to_string(o.excess_penalty), "finite and >= 0");
  }
}

// Doubles from a std::mt19937_64's bits: the engine's output is fixed by
// the standard, std::uniform_real_distribution's is not.
class AutoswapBoRandom {
 public:
  explicit AutoswapBoRandom(std::uint64_t seed) : engine_(seed) {}
  // Uniform in [lo, hi).
  double between(double lo, double hi) {
    const double unit = static_cast<double>(engine_() >> 11) * 0x1p-53;
    return lo + (hi - lo) * unit;
  }
  AutoswapBoWeights weights() {
    AutoswapBoWeights w{};
    for (double& v : w) v = between(-1, 1);
    return w;
  }

 private:
  std::mt19937_64 engine_;
};

CACHEDARRAYS_INLINE Eigen::RowVectorXd autoswap_bo_row(const AutoswapBoWeights& w) {
  Eigen::RowVectorXd row(static_cast<Eigen::Index>(w.size()));
  for (std::size_t i = 0; i < w.size(); ++i) row(static_cast<Eigen::Index>(i)) = w[i];
  return row;
}

// The next weights: the most expected improvement over the best objective
// among random candidates, half over the whole box, half near the best
// weights (the search's refinement once a good region is found).
CACHEDARRAYS_INLINE AutoswapBoWeights autoswap_bo_next(const std::vector<AutoswapBoEvaluation>& history,
                                                       std::size_t best, const AutoswapBoOptions& o,
                                                       AutoswapBoRandom& random) {
  const auto n = static_cast<Eigen::Index>(history.size());
  Eigen::MatrixXd x(n, 4);
  Eigen::VectorXd y(n);
  for (Eigen::Index i = 0; i < n; ++i) {
    x.row(i) = autoswap_bo_row(history[static_cast<std::size_t>(i)].weights);
    y(i) = history[static_cast<std::size_t>(i)].objective;
  }
  const GaussianProcess gp(std::move(x), y, {o.length_scale, o.noise});
  const double deviation = std::sqrt((y.array() - y.mean()).square().mean());
  const double xi = o.xi * (deviation > 0 ? deviation : 1.0);
  const double best_y = history[best].objective;
  AutoswapBoWeights chosen = history[best].weights;
  double most = -1;
  for (int s = 0; s < o.acquisition_samples; ++s) {
    AutoswapBoWeights w{};
    if (s % 2 == 0) {
      w = random.weights();
    } else {
      for (std::size_t i = 0; i < w.size(); ++i) {
        w[i] = std::clamp(history[best].weights[i] + random.between(-0.25, 0.25), -1.0, 1.0);
      }
    }
    const double ei = expected_improvement(gp.predict(autoswap_bo_row(w)), best_y, xi);
    if (ei > most) {
      most = ei;
      chosen = w;
    }
  }
  return chosen;
}

}  // namespace detail

CACHEDARRAYS_INLINE double autoswap_bo_objective(const AutoswapPlan& plan, std::uint64_t limit, double excess_penalty) {
  // Over by LOAD' (the selection ran out of candidates) or by the load the
  // serialized copies give (LOAD'': the paper delays a kernel until its
  // memory is free; this model does not, so it is counted here).
  const std::uint64_t scheduled = plan.scheduled_peak > limit ? plan.scheduled_peak - limit : 0;
  const std::uint64_t excess = std::max(plan.fits ? 0 : plan.excess, scheduled);
  if (excess == 0) return plan.overhead_seconds;
  const double iteration = plan.iteration_seconds > 0 ? plan.iteration_seconds : 1.0;
  return plan.overhead_seconds +
         excess_penalty * iteration * static_cast<double>(excess) / static_cast<double>(limit > 0 ? limit : 1);
}

CACHEDARRAYS_INLINE AutoswapBoResult autoswap_optimise_weights(const Program& program, const TierCosts& costs,
                                                               AutoswapOptions base, const AutoswapBoOptions& options) {
  detail::autoswap_bo_check(options);
  base.score = AutoswapScore::bo;
  AutoswapBoResult result;
  detail::AutoswapBoRandom random(options.seed);
  const auto evaluate = [&](const AutoswapBoWeights& w, AutoswapBoSource source) {
    base.bo_weights = w;
    AutoswapPlan plan = autoswap_plan(program, costs, base);
    AutoswapBoEvaluation e;
    e.weights = w;
    e.source = source;
    e.objective = autoswap_bo_objective(plan, base.limit, options.excess_penalty);
    e.overhead_seconds = plan.overhead_seconds;
    e.fits = plan.fits;
    e.swaps = plan.swaps.size();
    // Strictly better only: on a tie the earlier evaluation (a single
    // score first of all) stays the best.
    if (result.history.empty() || e.objective < result.best_objective) {
      result.best_objective = e.objective;
      result.best_evaluation = result.history.size();
      result.weights = w;
      result.plan = std::move(plan);
    }
    result.history.push_back(e);
    if (options.progress) {
      options.progress(
          fmt::format("bo {}/{} ({}): weights ({:+.3f}, {:+.3f}, {:+.3f}, {:+.3f}) objective {:.6g} s, "
                      "best {:.6g} s",
                      result.history.size(), options.evaluations, to_string(source), w[0], w[1], w[2], w[3],
                      e.objective, result.best_objective));
    }
  };
  const auto done = [&] {
    return result.history.size() >= static_cast<std::size_t>(options.evaluations) ||
           (!result.history.empty() && result.best_objective <= 0);
  };

  // The four single scores as unit weight vectors, in equation (3)'s order.
  for (std::size_t term = 0; term < 4 && !done(); ++term) {
    AutoswapBoWeights unit{};
    unit[term] = 1;
    evaluate(unit, AutoswapBoSource::single_score);
    if (term == 0 || result.history.back().objective < result.best_single_objective) {
      result.best_single = autoswap_bo_terms[term];
      result.best_single_objective = result.history.back().objective;
    }
  }
  for (int i = 0; i < options.initial_random && !done(); ++i) evaluate(random.weights(), AutoswapBoSource::random);
  while (!done()) {
    evaluate(detail::autoswap_bo_next(result.history, result.best_evaluation, options, random),
             AutoswapBoSource::expected_improvement);
  }
  return result;
}

}  // namespace cachedarrays::plan
