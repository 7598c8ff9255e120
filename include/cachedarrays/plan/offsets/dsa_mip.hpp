// The exact solver of offline dynamic storage allocation: Sekiyama et al.'s
// mixed integer program (Sekiyama et al., "Profile-guided memory optimization for
// deep neural networks", §3.1, formulation (1)-(6)), solved by COIN-OR Cbc
// under a time limit. It serves small instances, where it proves an optimum,
// and checks the heuristics (best_fit_offsets.hpp, smartpool_offsets.hpp):
// on any instance it returns a plan at least as good as theirs and a lower
// bound, so their distance from the optimum is known.
//
// The MIP has one binary per pair of buffers alive at the same time (the
// paper's colliding pairs E), so its size grows with the square of the
// buffers that overlap; colliding_pairs() tells the cost before solving.
#pragma once

#include "cachedarrays/config.hpp"

#include <cstddef>
#include <optional>
#include <string>

#include "cachedarrays/plan/offsets/dsa_problem.hpp"

namespace cachedarrays::plan {

/// How mip_offsets searches: its limits and where it starts.
struct MipOptions {
  /// Cbc's search stops after this many seconds of wall time (building the
  /// model and the heuristics come on top). Positive.
  double time_limit_seconds = 10;
  /// Cbc's search also stops once (footprint - lower bound) / footprint is at
  /// most this; 0: only a proven optimum stops it. In [0, 1).
  double relative_gap = 0;
  /// The incumbent the search starts from. Empty: the best of the heuristics
  /// (best-fit offset lines, SmartPool best-fit and first-fit). The result is
  /// never worse than it. Must be a solution of the problem (check_plan).
  std::optional<OffsetPlan> warm_start;
};

/// What mip_offsets found: the plan, how far it may be from the optimum, and
/// how the search ended.
struct MipResult {
  OffsetPlan plan;       ///< a solution (check_plan passes), offsets multiples of the alignment
  bool optimal = false;  ///< plan.footprint is proven the least possible
  /// Bytes no solution goes below: max-live, raised by the alignment (the
  /// top buffer alone may end off the alignment) and by Cbc's bound.
  double lower_bound = 0;
  double gap = 0;      ///< (plan.footprint - lower_bound) / plan.footprint; 0 when optimal
  double seconds = 0;  ///< wall time of the whole call
  std::string status;  ///< how the search ended, for a person ("optimal: ...", "stopped: ...")
};

/// The optimum of `problem`, or the best plan found when the search stops at
/// a limit (optimal false, gap > 0). Throws invalid_argument for options out
/// of range or a warm start that is not a solution, and error when Cbc fails
/// (numerical trouble, an interrupt, a model it calls infeasible), saying
/// which. Solves one problem at a time in the process: Cbc's solver keeps
/// state in statics, so concurrent calls wait for each other.
[[nodiscard]] MipResult mip_offsets(const DsaProblem& problem, const MipOptions& options = {});

/// |E|: the pairs of buffers alive at the same time, each a binary variable
/// and two rows of the MIP. O(n log n + |E|).
[[nodiscard]] std::size_t colliding_pairs(const DsaProblem& problem);

}  // namespace cachedarrays::plan

#ifdef CACHEDARRAYS_HEADER_ONLY
#include "cachedarrays/plan/offsets/dsa_mip-inl.hpp"
#endif
