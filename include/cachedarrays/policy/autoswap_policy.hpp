// AutoSwap as a policy (SmartPool/AutoSwap §IV): the iteration's program
// is planned once by AutoSwap's swap planner (plan/schedule/autoswap.hpp, the score
// the policy is named after: "autoswap:doa", ":aoa", ":wdoa", ":swdoa",
// ":bo", the weights of equation (3) found by Bayesian optimisation, §IV-C;
// builtin_policies.hpp reads the score from the name),
// and the swaps are executed by AutoTM's executor (autotm_policy.hpp),
// which follows any plan of AutoTM's form:
//   - every object is in the fast tier whenever a kernel uses it (AutoSwap
//     swaps, it never runs a kernel on the slow tier);
//   - a swap's copy out is an asynchronous move out started when the kernel
//     after the use begins (§IV-E: "right after the access"), its DRAM freed
//     once that kernel ends;
//   - its copy in is an asynchronous move in started when the kernel the
//     planner's schedule chose begins (AutoswapSwap::in_kernel: in advance
//     of the next use, early enough that the copies queued on the one
//     engine are not late, as the load allows, §IV-E); if it has
//     not arrived by the use, the executor waits for it (or brings the
//     object in then, Listing 2): time, never data.
//
// AutoSwap's limit is a memory load in bytes (Definition 5); the fast heap
// holds blocks and holes: the plan is fitted to the heap by fit_to_heap
// (autotm_policy.hpp), AutoTM's fragmentation loop.
#pragma once

#include "cachedarrays/config.hpp"

#include "cachedarrays/plan/program/program.hpp"
#include "cachedarrays/plan/schedule/autoswap.hpp"
#include "cachedarrays/plan/schedule/autotm.hpp"
#include "cachedarrays/policy/autotm_policy.hpp"

namespace cachedarrays::policy {

/// The AutoSwap plan `swaps` of `program` as a plan of AutoTM's form, for
/// AutotmPolicy's executor: every object in the fast tier whenever a kernel
/// uses it, each swap an asynchronous move out and back in. modeled_seconds
/// is the iteration without swaps plus the modeled waits for copies in.
[[nodiscard]] plan::MovePlan autoswap_executable(const plan::Program& program, const plan::AutoswapPlan& swaps);

/// AutoSwap's planner picking swaps by `score`, for
/// AutotmPolicyOptions::planner; the hook is named as the policy of that
/// score is ("autoswap:bo").
[[nodiscard]] PlannerHook autoswap_planner(plan::AutoswapScore score);

}  // namespace cachedarrays::policy

#ifdef CACHEDARRAYS_HEADER_ONLY
#include "cachedarrays/policy/autoswap_policy-inl.hpp"
#endif
