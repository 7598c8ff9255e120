// Sekiyama et al.'s best-fit heuristic for offline dynamic storage
// allocation (Sekiyama et al., "Profile-guided memory optimization for deep neural
// networks", §3.2 and Figure 1), itself Burke et al.'s best-fit heuristic for
// two-dimensional strip packing with the x positions (lifetimes) fixed.
//
// Placed buffers form a skyline over time: a row of "offset lines", each a
// time span and the offset above everything placed in it. The heuristic
// repeatedly takes the lowest line (the leftmost of equal ones) and places
// there, of the buffers whose lifetime lies inside the line's span, the one
// with the longest lifetime; when none fits, it lifts the line to its lower
// neighbour and merges them. Placing or lifting each removes a buffer or a
// line, so it takes O(n) rounds of O(n) work: O(n^2), as the paper says.
#pragma once

#include "cachedarrays/config.hpp"

#include <cstdint>
#include <vector>

#include "cachedarrays/plan/offsets/dsa_problem.hpp"

namespace cachedarrays::plan {

/// The best-fit plan of `problem`: offsets are multiples of
/// problem.alignment() (sizes are rounded up to it on the skyline).
/// Deterministic: among buffers of the same lifetime, the larger goes first,
/// then the lower index (the paper leaves ties open).
[[nodiscard]] OffsetPlan best_fit_offsets(const DsaProblem& problem);
/// The same above a floor already taken: at time t the bytes [0, floor[t])
/// are occupied (by buffers placed before, e.g. autotm_offsets.hpp's
/// wrapping stays; none at times past floor.size()), and every buffer lies
/// above the floor wherever it is alive. The footprint counts the buffers
/// only.
[[nodiscard]] OffsetPlan best_fit_offsets(const DsaProblem& problem, const std::vector<std::uint64_t>& floor);

}  // namespace cachedarrays::plan

#ifdef CACHEDARRAYS_HEADER_ONLY
#include "cachedarrays/plan/offsets/best_fit_offsets-inl.hpp"
#endif
