// A judge of candidate plans by replay (policy::PlanJudge,
// AutotmPolicyOptions::judge): a planner that weighs several plans (ReDL's
// period sizes) asks, for each, how long the executor takes with it, and
// the answer here is the steady iteration of a replay of the program's
// trace (sim/replay.hpp) by an AutotmPolicy that follows the plan as given.
// The planners' own models leave out what the replay charges: the fast
// heap's fragments and the holes made for them (DataManager::make_hole),
// and the executor's own rules of when a kernel waits
// (plan::MovePlanRules::executor(), which plan::time_move_plan applies).
//
// Modeled, not measured: a judge on an emulated run models that run's
// machine (its tiers' bandwidths, the kernels' profiled times).
#pragma once

#include "cachedarrays/config.hpp"

#include <cstdint>
#include <memory>

#include "cachedarrays/manager/mover.hpp"
#include "cachedarrays/manager/trace.hpp"
#include "cachedarrays/plan/program/program.hpp"
#include "cachedarrays/plan/program/roofline.hpp"
#include "cachedarrays/policy/autotm_policy.hpp"
#include "cachedarrays/sim/replay.hpp"

namespace cachedarrays {

/// Where a judge replays: the two tiers (sizes and bandwidths, as the run
/// has them), the kernels' time model (null: memory-bound) and the run's
/// mover threads (MoverOptions::threads: how many copies go side by side).
struct ReplayJudgeMachine {
  /// @var fast_bytes
  /// The fast tier's capacity in bytes (> 0).
  /// @var slow_bytes
  /// The slow tier's capacity in bytes (> 0).
  std::uint64_t fast_bytes = 0, slow_bytes = 0;
  /// @var fast
  /// The fast tier's bandwidths (each > 0).
  /// @var slow
  /// The slow tier's bandwidths (each > 0).
  DeviceModel fast{"fast", 0, 0}, slow{"slow", 0, 0};
  std::shared_ptr<const plan::KernelTimeModel> kernel_time;  ///< the kernels' time (null: plan::MemoryBound)
  unsigned mover_threads = MoverOptions{}.threads;           ///< the run's mover threads (> 0)

  /// Tiers of these sizes as `planned` models them: its tiers' bandwidths
  /// (AutotmPolicyOptions::fast_tier, slow_tier) and its kernel time model,
  /// so that the judge and the planner it judges for see one machine, with
  /// the run's `mover_threads`.
  [[nodiscard]] static ReplayJudgeMachine as_planned(std::uint64_t fast_bytes, std::uint64_t slow_bytes,
                                                     const policy::AutotmPolicyOptions& planned,
                                                     unsigned mover_threads = MoverOptions{}.threads);
};

/// A judge replaying `trace` (several iterations, as nn::dry_run_trace makes
/// them; the steady iteration's seconds are the answer) with `program` set,
/// on `machine`, by an AutotmPolicy with `follower`'s options whose planner
/// returns the candidate plan (follower's judge is dropped: a judged replay
/// judges nothing). +infinity for a plan the heaps cannot hold. Throws
/// invalid_argument when follower has no planner hook (AutoTM's ILP takes no
/// judge), a tier size or the mover's threads are 0 or a bandwidth is not > 0.
[[nodiscard]] policy::PlanJudge replay_judge(std::shared_ptr<const Trace> trace,
                                             std::shared_ptr<const plan::Program> program, ReplayJudgeMachine machine,
                                             policy::AutotmPolicyOptions follower);

}  // namespace cachedarrays

#ifdef CACHEDARRAYS_HEADER_ONLY
#include "cachedarrays/sim/replay_judge-inl.hpp"
#endif
