// How fast any placement can be on a fast tier of a given size: a lower
// bound on the iteration time, from the kernels alone.
//
// A kernel whose arguments together pass the fast tier cannot have all of
// them there, whatever a policy moves or when: some run from the slow tier.
// The bound takes, for every kernel, its cheapest way to keep its arguments
// in the fast tier within `fast_bytes` (a kernel's own arguments only: the
// rest of what is alive may wait in the slow tier) and charges nothing for
// copies (all of them hidden behind the kernels) nor for fragments. No
// policy, planned or not, replays below it on that machine; how far a
// policy is above it is what scheduling can still win, and a bound above a
// slowdown goal says the goal is out of reach at that size (as when a large
// fully-connected layer's weights, gradient and momentum, meeting in one SGD
// kernel, together pass a small tier).
//
// The cost model is TierCosts' (the planners'): a kernel's time in the
// fast tier plus a penalty for each argument in the slow tier. For the
// roofline (plan/program/roofline.hpp), whose time is a convex function of the
// bytes on the slow tier, the penalty of several arguments together is at
// least the sum of their penalties alone, so the bound holds for its replay
// too (and the overload on the model prices each choice by the model
// itself). Per kernel the choice is a covering knapsack: leave in the slow tier
// at least the bytes over the tier, at the least penalty. Exact for
// kernels of up to `exact_objects` distinct objects; past that its linear
// relaxation (by penalty per byte, the last object taken in part), which is
// lower still, so the bound stays a bound.
#pragma once

#include "cachedarrays/config.hpp"

#include <cstdint>
#include <vector>

#include "cachedarrays/plan/program/program.hpp"
#include "cachedarrays/plan/program/roofline.hpp"
#include "cachedarrays/plan/program/tier_costs.hpp"

namespace cachedarrays::plan {

/// The lower bound on the iteration time on a fast tier of one size, with
/// what it is made of.
struct FastTierBound {
  std::uint64_t fast_bytes = 0;        ///< the size of the fast tier the bound is for
  double seconds = 0;                  ///< the bound on one iteration
  double all_fast_seconds = 0;         ///< every argument in the fast tier: sum of fast_seconds
  std::uint32_t kernels_over = 0;      ///< kernels whose arguments together pass the tier
  std::uint64_t largest_excess = 0;    ///< the most bytes by which one kernel's arguments pass it
  std::vector<double> kernel_seconds;  ///< by kernel: its share of the bound
  /// seconds / all_fast_seconds: the least slowdown any placement has on
  /// this tier (1 for an iteration of no time).
  [[nodiscard]] double slowdown() const noexcept { return all_fast_seconds > 0 ? seconds / all_fast_seconds : 1.0; }
};

/// The bound for `program` with `costs` (TierCosts::from_model or a
/// profile) on a fast tier of `fast_bytes`. An argument named twice by one
/// kernel is one object there (its bytes once, its penalties summed). Throws
/// invalid_argument when the costs do not match the program (one time per
/// kernel, one penalty per argument, each finite and >= 0).
[[nodiscard]] FastTierBound fast_tier_bound(const Program& program, const TierCosts& costs, std::uint64_t fast_bytes);
/// The same on a kernel time model with the tiers' bandwidths (as a replay
/// on them charges): a kernel's subsets are priced by the model itself, not
/// by the sum of one-argument penalties: never lower, and higher where
/// arguments that each hide under a kernel's compute time do not together
/// (where the kernels over the tier are memory-bound, as on the bundled
/// CNNs, the two agree). Throws invalid_argument for a bandwidth not > 0
/// (TierCosts::from_model).
[[nodiscard]] FastTierBound fast_tier_bound(const Program& program, const KernelTimeModel& model,
                                            const emulation::Bandwidth& fast, const emulation::Bandwidth& slow,
                                            std::uint64_t fast_bytes);

/// Kernels of up to this many distinct objects are solved exactly; larger
/// ones by the linear relaxation.
inline constexpr std::size_t fast_tier_bound_exact_objects = 16;

}  // namespace cachedarrays::plan

#ifdef CACHEDARRAYS_HEADER_ONLY
#include "cachedarrays/plan/program/fast_tier_bound-inl.hpp"
#endif
