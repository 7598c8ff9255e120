// SmartPool's offline dynamic storage allocation (SmartPool/AutoSwap, Zhang et al.,
// "Efficient Memory Management for GPU-based Deep Learning Systems", §III-B
// and §III-C): weighted interval colouring. Buffers are the vertices of the
// interval graph of their lifetimes, weighted by size; colouring a vertex
// gives it a range of addresses ("colours") no neighbour shares.
//
// The buffers are taken in descending order of size; each goes into a free
// hole between the address ranges of the buffers already placed that
// overlap it in time: the smallest hole it fits in (best-fit, the paper's
// default) or the lowest (first-fit, Fig. 4), and on top of them when no
// hole is large enough ("the memory pool will be extended"). Unlike the WIC
// algorithm it implements, sizes are not rounded to powers of two (§III-C).
// O(n^2 log n) in the worst case: each buffer looks at every placed one and
// sorts its neighbours by address.
#pragma once

#include "cachedarrays/config.hpp"

#include <cstdint>

#include "cachedarrays/plan/offsets/dsa_problem.hpp"

namespace cachedarrays::plan {

/// Which free hole a buffer goes into (SmartPool/AutoSwap Fig. 4).
enum class HoleFit : std::uint8_t {
  best,   ///< the smallest hole it fits in (the paper's default)
  first,  ///< the lowest hole it fits in
};

/// SmartPool's plan of `problem`, holes chosen by `fit`: offsets are
/// multiples of problem.alignment() (a hole fits a buffer when the hole's
/// start rounded up to the alignment leaves room for it). Deterministic:
/// buffers of equal size go in index order, and of equal holes the lower
/// wins (the paper leaves ties open).
[[nodiscard]] OffsetPlan smartpool_offsets(const DsaProblem& problem, HoleFit fit = HoleFit::best);

}  // namespace cachedarrays::plan

#ifdef CACHEDARRAYS_HEADER_ONLY
#include "cachedarrays/plan/offsets/smartpool_offsets-inl.hpp"
#endif
