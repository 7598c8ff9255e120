// A plan of moves between two tiers, as every scheduling planner returns
// it (AutoTM's ILP, ReDL, AutoSwap's schedule made into moves) and the
// planned policies execute it: where each argument of each kernel is, and
// which objects move when. The planners' own settings stay in their
// options; this is what they agree on.
#pragma once

#include "cachedarrays/config.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace cachedarrays::plan {

/// One move of an object between the tiers.
struct TierMove {
  std::uint32_t object = 0;  ///< the program's object number
  std::uint32_t kernel = 0;  ///< the kernel the move is made at (see to_fast)
  /// Into the fast tier (else out to the slow one).
  /// Synchronous: in just before `kernel`, out just after it.
  /// Asynchronous: started when `kernel` begins, beside it; a move in has
  /// its fast-tier room from then on, a move out frees its room after `kernel`.
  bool to_fast = true;
  bool asynchronous = false;  ///< beside `kernel` (else blocking, before or after it)
  /// Field-wise equality.
  friend bool operator==(const TierMove&, const TierMove&) = default;
};

/// A two-tier plan: where each argument is during each kernel, the moves,
/// and how the planner's search and the fragmentation loop (AutoTM §4.2)
/// went.
struct MovePlan {
  /// By kernel, by argument (as program.kernels()[k].args): in the fast tier during k.
  std::vector<std::vector<bool>> in_fast;
  std::vector<TierMove> moves;  ///< in program order
  double modeled_seconds = 0;   ///< the objective: kernels plus blocking moves
  bool optimal = false;         ///< proven within the planner's gap
  double gap = 0;               ///< (objective - bound) / objective
  double seconds = 0;           ///< wall time of the search (every retry)
  std::string status;           ///< how the search went, for a person
  /// @name Fragmentation loop
  /// The fragmentation loop: solves after the first, the limits of the last
  /// solve, and the replayed allocator's extent (highest byte allocated in
  /// the fast tier) at the worst kernel; fits = that extent is within the
  /// fast tier's limit. With no replay, fast_extent stays 0 and fits true,
  /// unchecked (autotm_dram_extents replays any plan).
  ///@{
  std::uint32_t retries = 0;                 ///< solves after the first
  std::vector<std::uint64_t> kernel_limits;  ///< by kernel: L_k of the last solve
  std::uint64_t fast_extent = 0;             ///< the replayed heap's highest byte at the worst kernel
  bool fits = true;                          ///< fast_extent <= the fast tier's limit
  ///@}
  /// Candidate plans a judge weighed before this one was kept
  /// (policy::AutotmPolicyOptions::judge; ReDL's period sizes); 0: none.
  std::uint32_t judged = 0;
};

}  // namespace cachedarrays::plan
