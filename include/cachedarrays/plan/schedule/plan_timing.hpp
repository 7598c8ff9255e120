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
// What the planners' models and the executor differ in besides the clock
// is given as rules (MovePlanRules): when a kernel's asynchronous moves are
// issued, whether an asynchronous move out holds up the next kernel or
// waits behind later copies, and whether a kernel that uses an argument in
// the slow tier waits for a copy of it in flight. Each model's rules are named: MovePlanRules::redl(),
// autoswap() and executor(). Modeled figures: label them as such.
#pragma once

#include "cachedarrays/config.hpp"

#include <vector>

#include "cachedarrays/plan/program/move_plan.hpp"
#include "cachedarrays/plan/program/program.hpp"
#include "cachedarrays/plan/program/tier_costs.hpp"

namespace cachedarrays::plan {

/// Where the planners' models of a plan's moves beside its kernels, and the
/// executor that follows a plan (policy::AutotmPolicy, as the replay times
/// it), differ.
struct MovePlanRules {
  /// true: a kernel's asynchronous moves are issued once it has waited for
  /// its arguments, as it starts (ReDL's simulator, redl.hpp); false: at
  /// the boundary before it, before its wait (AutoSwap's engine, §IV-E, and
  /// the executor, whose on_kernel_begin issues them before the kernel's
  /// arguments are pinned).
  bool issue_after_wait = true;
  /// An asynchronous move out holds up the kernel after it, and the end of
  /// the iteration, until it lands (ReDL's rule, redl.hpp "The model").
  bool write_backs_hold_next = false;
  /// A kernel waits for the copies in flight of every argument, also of one
  /// it uses in the slow tier (the executor's rule: the runtime pins an
  /// object once its copies have landed); false: only of those it uses in
  /// the fast tier, as the planners model it, since a read in place does
  /// not need the copy made beside it.
  bool slow_uses_wait = false;
  /// An asynchronous move out is a background copy (CopyPriority::background,
  /// as the executor's write-backs are): it waits behind the copies issued
  /// before a mover thread takes it, so a move in issued after it may pass
  /// it (the executor's rule); false: the mover takes every move in issue
  /// order, as the planners model it.
  bool write_backs_in_background = false;

  /// ReDL's simulator (redl.hpp).
  [[nodiscard]] static constexpr MovePlanRules redl() noexcept {
    return {.issue_after_wait = true,
            .write_backs_hold_next = true,
            .slow_uses_wait = false,
            .write_backs_in_background = false};
  }
  /// AutoSwap's engine (autoswap.hpp, AutoSwap §IV-E).
  [[nodiscard]] static constexpr MovePlanRules autoswap() noexcept {
    return {.issue_after_wait = false,
            .write_backs_hold_next = false,
            .slow_uses_wait = false,
            .write_backs_in_background = false};
  }
  /// The executor, policy::AutotmPolicy following the plan, as the replay
  /// (sim/replay.hpp) times it when the fast tier has room for every move
  /// as it is issued. With less room, the executor also puts off moves in
  /// until a hole opens and waits for write-backs to land before their room
  /// is reused: the heap's rules, which no planner models.
  [[nodiscard]] static constexpr MovePlanRules executor() noexcept {
    return {.issue_after_wait = false,
            .write_backs_hold_next = false,
            .slow_uses_wait = true,
            .write_backs_in_background = true};
  }
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
