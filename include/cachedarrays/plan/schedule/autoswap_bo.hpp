// AutoSwap's Bayesian optimisation of its priority score (SmartPool/AutoSwap, Zhang
// et al., §IV-C, equation (3)): BO = a*AOA + b*DOA + c*WDOA + d*SWDOA over
// the standardised scores (autoswap_bo_scores in autoswap.hpp), the weights
// in [-1, 1] "tuned automatically" by Bayesian optimisation with a Gaussian
// process prior, "the optimization objective ... the communication
// overhead": each evaluation plans with the weights (autoswap_plan, score
// bo) and feeds the plan's modeled overhead back; "after updating about 30
// times, the weights become stable". §VI-B.2 (Fig. 9): "BO safeguards the
// overhead to be no larger than the minimum of the 4 PS".
//
// The search:
//   - The first four evaluations are the four single scores as weight
//     vectors: (1,0,0,0) AOA, (0,1,0,0) DOA, (0,0,1,0) WDOA, (0,0,0,1) SWDOA
//     (autoswap_plan ranks a unit vector exactly as the single score). The
//     best of all evaluations is returned, the earliest on a tie, so the
//     result is never worse than the best single score: the paper's
//     safeguard holds by construction, not by luck of the search.
//   - Then `initial_random` weight vectors uniform in [-1, 1]^4 (the paper's
//     "randomly initialized" weights), then the rest chosen one at a time:
//     a Gaussian process (Matérn 5/2 kernel, fixed length scale, a jitter
//     on the diagonal; detail/gaussian_process.hpp, solved by Eigen's LLT)
//     over the evaluations so far, and the next weights the ones of most
//     expected improvement among `acquisition_samples` candidates: half
//     uniform in [-1, 1]^4, half within ±0.25 of the best weights so far
//     (clipped to the box). All drawn from one std::mt19937_64 of `seed`,
//     turned into doubles by its bits (no std distribution, whose results
//     differ between standard libraries): the same seed, the same search.
//   - The objective of a plan is its modeled overhead (AutoswapPlan::
//     overhead_seconds), plus, for a plan over the limit,
//     excess_penalty * iteration_seconds * excess / limit (an iteration of
//     0 s counts as 1 s): with the default 1000, a plan 1 % over the limit
//     costs as much as ten iterations' overhead. A plan is over the limit
//     when its LOAD' is (it does not fit: the selection ran out of
//     candidates, §IV-D, whatever the weights) or when the load its
//     serialized copies give is (scheduled_peak, the paper's LOAD'': where
//     a copy out has not ended, the paper delays the kernel that needs the
//     memory; this model does not delay it, so the excess is counted here).
//     The second depends on the weights: without it the search would
//     prefer a plan that waits less by holding more than the limit.
//   - An objective of 0 (no wait, within the limit) cannot be beaten: the
//     search stops there, with fewer evaluations than asked for.
#pragma once

#include "cachedarrays/config.hpp"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "cachedarrays/plan/program/program.hpp"
#include "cachedarrays/plan/schedule/autoswap.hpp"
#include "cachedarrays/plan/schedule/autotm.hpp"

namespace cachedarrays::plan {

/// How autoswap_optimise_weights searches (see the file comment).
struct AutoswapBoOptions {
  int evaluations = 30;            ///< plans made, the four single scores included; >= 4
  int initial_random = 5;          ///< random weight vectors after those four, before the GP chooses; >= 0
  std::uint64_t seed = 1;          ///< of the std::mt19937_64 every random draw comes from
  int acquisition_samples = 2000;  ///< candidates the expected improvement is maximised over; >= 1
  double length_scale = 0.5;       ///< of the Matérn 5/2 kernel, in weight units; > 0
  double noise = 1e-6;             ///< jitter on the kernel's diagonal (standardised objective); > 0
  double xi = 0.01;                ///< expected improvement's margin, in objective deviations; >= 0
  double excess_penalty = 1000;    ///< iterations per limit exceeded in full (see above); >= 0
  /// Called after each evaluation with one line: its number, where its
  /// weights came from, the weights, the objective and the best so far.
  /// Null: silent.
  std::function<void(const std::string&)> progress;
};

/// Where an evaluation's weights came from.
enum class AutoswapBoSource : std::uint8_t {
  single_score,         ///< one of the four unit vectors: a single score alone
  random,               ///< uniform in [-1, 1]^4, before the GP chooses
  expected_improvement  ///< the GP's choice: the most expected improvement
};
/// The source's name: "single score", "random" or "expected improvement".
[[nodiscard]] const char* to_string(AutoswapBoSource source) noexcept;

/// One evaluation of the search: a weight vector and the plan it gave.
struct AutoswapBoEvaluation {
  AutoswapBoWeights weights{};                               ///< a, b, c, d of equation (3)
  AutoswapBoSource source = AutoswapBoSource::single_score;  ///< where the weights came from
  double objective = 0;                                      ///< what the search minimises (see above), seconds
  double overhead_seconds = 0;                               ///< the plan's AutoswapPlan::overhead_seconds
  bool fits = false;                                         ///< the plan's AutoswapPlan::fits
  std::size_t swaps = 0;                                     ///< how many swaps the plan picked
};

/// What autoswap_optimise_weights found: the best weights, their plan, and
/// every evaluation.
struct AutoswapBoResult {
  AutoswapBoWeights weights{};                ///< the best; autoswap_plan with score bo and these weights gives `plan`
  AutoswapPlan plan;                          ///< the plan of the best weights
  double best_objective = 0;                  ///< the plan's objective, the least of history's
  std::size_t best_evaluation = 0;            ///< its index in history
  std::vector<AutoswapBoEvaluation> history;  ///< in order of evaluation, the four single scores first
  /// The best of the four single scores (the first four evaluations; fewer
  /// when one reaches 0 and the search stops).
  AutoswapScore best_single = AutoswapScore::aoa;
  /// best_single's objective: best_objective <= best_single_objective.
  double best_single_objective = 0;
};

/// The objective of a plan made under `limit` (see above), seconds.
[[nodiscard]] double autoswap_bo_objective(const AutoswapPlan& plan, std::uint64_t limit, double excess_penalty);

/// The weights of equation (3) that minimise the objective, by Bayesian
/// optimisation (§IV-C), and their plan. `base` gives the limit and the
/// candidate filters; its score and bo_weights are not read. Throws
/// invalid_argument for options outside the ranges above, naming the value
/// and the range, and as autoswap_plan does for the program, costs and limit.
[[nodiscard]] AutoswapBoResult autoswap_optimise_weights(const Program& program, const TierCosts& costs,
                                                         AutoswapOptions base, const AutoswapBoOptions& options);

}  // namespace cachedarrays::plan

#ifdef CACHEDARRAYS_HEADER_ONLY
#include "cachedarrays/plan/schedule/autoswap_bo-inl.hpp"
#endif
