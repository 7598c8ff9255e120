// An exact search for offline dynamic storage allocation in the manner of
// MiniMalloc (Moffitt, "MiniMalloc: A Lightweight Memory Allocator for
// Hardware-Accelerated Machine Learning", ASPLOS 2024; google/minimalloc
// src/solver.cc and src/sweeper.cc): a depth-first branch and bound that
// decides whether the buffers fit below a capacity.
//
// It enumerates only *canonical* solutions: each buffer goes to the lowest
// offset the buffers placed before it allow (its "minimum offset"), and the
// (offset, preorder rank) of the buffers placed is non-decreasing. Every
// solution can be lowered and reordered into a canonical one that is no
// higher (paper §4.1), so searching them is complete. The pruning and
// inference follow the paper's §4.2-4.4 (solver.cc's SolverParams):
//   - sections (§4.2, sweeper.h): the maximal sets of buffers alive together;
//     in each, the bytes still to place must fit between its floor (the top
//     of what is placed there, and the lowest minimum offset of what is
//     not) and the capacity;
//   - monotonic floor: nothing is placed below the offset just used, so it
//     raises every section's floor;
//   - dominance (§4.3): a buffer placed at or above the top of another
//     unplaced buffer that could go lower leaves a gap that a canonical
//     solution would fill first, so it is not tried;
//   - ordering (§4.4): buffers are tried by minimum offset, then by a static
//     preorder; the preorders "WAT", "TAW", "TWA" (width = lifetime, area =
//     size x lifetime, total = the largest section total the buffer is in)
//     take turns under node limits that double (solver.cc RoundRobin). As in
//     solver.cc SubSolve, each part a decomposition yields gets its own
//     preorder, "total" counting the bytes still to place there.
//   - dynamic decomposition (solver.cc DynamicallyDecompose): where no
//     unplaced buffer crosses between two sections, the parts on either side
//     do not interact and are searched one after the other.
//
// search_offsets answers "does it fit in `capacity`": a plan, a proof that
// none exists, or "stopped" at a limit. minimize_footprint searches for the
// least footprint by probing capacities from max-live up to the best
// heuristic's footprint.
#pragma once

#include "cachedarrays/config.hpp"

#include <cstdint>
#include <limits>
#include <string>

#include "cachedarrays/plan/offsets/dsa_problem.hpp"

namespace cachedarrays::plan {

/// The limits of search_offsets and minimize_footprint.
struct SearchOptions {
  /// Wall time after which the search stops; positive. minimize_footprint:
  /// for all its probes together.
  double time_limit_seconds = 10;
  /// Placements tried (the search tree's nodes) after which it stops;
  /// positive. minimize_footprint: for all its probes together.
  std::uint64_t node_limit = std::numeric_limits<std::uint64_t>::max();
};

/// How a search_offsets call ended.
enum class SearchStatus : std::uint8_t {
  found,       ///< plan is a solution within the capacity
  infeasible,  ///< proven: no solution fits in the capacity
  stopped,     ///< a limit was reached first; nothing is known
};

/// The status's name: "found", "infeasible" or "stopped".
[[nodiscard]] const char* to_string(SearchStatus status) noexcept;

/// What search_offsets answers for one capacity.
struct SearchResult {
  SearchStatus status = SearchStatus::stopped;  ///< found, proven infeasible, or stopped at a limit
  OffsetPlan plan;                              ///< when found: check_plan passes and plan.footprint <= capacity
  std::uint64_t nodes = 0;                      ///< placements tried
  double seconds = 0;                           ///< wall time of the call
};

/// Whether `problem` fits below `capacity` bytes (every offset + size <=
/// capacity, offsets multiples of the alignment). Throws invalid_argument for
/// a time limit that is not a positive finite number or a node limit of 0.
[[nodiscard]] SearchResult search_offsets(const DsaProblem& problem, std::uint64_t capacity,
                                          const SearchOptions& options = {});

/// What minimize_footprint found: the best plan, the bound it is measured
/// against, and the search's cost.
struct FootprintSearchResult {
  OffsetPlan plan;  ///< the best found: never worse than the best heuristic
  /// No solution has a footprint below this: max-live, or one more than the
  /// largest capacity proven infeasible.
  std::uint64_t lower_bound = 0;
  bool optimal = false;     ///< plan.footprint == lower_bound
  std::uint64_t nodes = 0;  ///< placements tried, over all probes
  std::size_t probes = 0;   ///< capacities searched
  double seconds = 0;       ///< wall time of the call
};

/// The least footprint the search finds within the limits: from the best of
/// the heuristics (best_fit_offsets, smartpool_offsets best- and first-fit),
/// it probes max-live first (where the MiniMalloc instances' optimum often
/// is), then bisects between the proven lower bound and the best footprint
/// found. Each probe gets half of the time left. Throws as search_offsets.
[[nodiscard]] FootprintSearchResult minimize_footprint(const DsaProblem& problem, const SearchOptions& options = {});

}  // namespace cachedarrays::plan

#ifdef CACHEDARRAYS_HEADER_ONLY
#include "cachedarrays/plan/offsets/dsa_search-inl.hpp"
#endif
