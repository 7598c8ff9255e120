// The time of any two-tier plan (MovePlan) on a program, on the one clock
// the planners and the replay share (copy_timeline.hpp, docs/design.md "What
// is known ahead"): kernels one after the other on the compute timeline,
// each taking costs.fast_seconds plus the slow_penalty of each argument the
// plan leaves in the slow tier; asynchronous moves on the mover's lanes
// beside them, synchronous ones on the compute thread; a kernel waits for
// the copies in flight of the arguments it finds in the fast tier. A move
// out of an object whose slow copy is still current (copied in and not
// written in the fast tier since) copies nothing: the runtime keeps the
// two linked. The iteration repeats until what one leaves to the next (the
// copies still running, which objects are written) repeats, and the steady
// iteration is reported.
//
// What the planners' models differ in besides the clock is given as rules:
// when a kernel's asynchronous moves are issued (ReDL's simulator, once the
// kernel has waited; AutoSwap's engine, at the boundary before it) and
// whether an asynchronous move out holds up the next kernel (ReDL's
// conservative rule, redl.hpp). Modeled figures: label them as such.
#pragma once

#include "cachedarrays/config.hpp"

#include <vector>

#include "cachedarrays/plan/program/move_plan.hpp"
#include "cachedarrays/plan/program/program.hpp"
#include "cachedarrays/plan/program/tier_costs.hpp"

namespace cachedarrays::plan {

/// Where the planners' models of a plan's moves beside its kernels differ.
struct MovePlanRules {
  /// true: a kernel's asynchronous moves are issued once it has waited for
  /// its arguments, as it starts (ReDL's simulator, redl.hpp); false: at
  /// the boundary before it, before its wait (AutoSwap's engine, §IV-E).
  bool issue_after_wait = true;
  /// An asynchronous move out holds up the kernel after it, and the end of
  /// the iteration, until it lands (ReDL's rule, redl.hpp "The model").
  bool write_backs_hold_next = false;
};

/// A plan's steady iteration on the shared timeline. Modeled seconds.
struct MovePlanTime {
  double seconds = 0;                ///< the iteration, waits included
  double wait_seconds = 0;           ///< compute time spent waiting for copies or making synchronous ones
  std::vector<double> kernel_start;  ///< by kernel: when it starts, after any wait
  unsigned iterations = 0;           ///< iterations run until the steady state repeated (at most 8)
};

/// The steady iteration of `plan` on `program` with `costs` (the copy
/// channels with costs.copy_lanes lanes) under `rules`, on a CopyTimeline.
/// Throws invalid_argument for costs that do not match the program
/// (TierCosts::check), a plan whose in_fast is not one entry per argument of
/// each kernel, or a move naming an object or kernel the program lacks.
[[nodiscard]] MovePlanTime time_move_plan(const Program& program, const TierCosts& costs, const MovePlan& plan,
                                          const MovePlanRules& rules = {});

}  // namespace cachedarrays::plan

#ifdef CACHEDARRAYS_HEADER_ONLY
#include "cachedarrays/plan/schedule/plan_timing-inl.hpp"
#endif
