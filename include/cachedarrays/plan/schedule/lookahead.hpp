// How far ahead copies must start (the lookahead of the A modes chosen from
// the kernel profiles rather than fixed). A copy issued
// when kernel i begins lands before kernel j begins only if the kernels
// i .. j-1 last at least as long as the copy: so the window a policy looks
// ahead, in kernels, follows from each kernel's modeled time and each
// kernel's bytes over the copy bandwidth.
#pragma once

#include "cachedarrays/config.hpp"

#include <cstdint>
#include <span>
#include <vector>

#include "cachedarrays/manager/emulation.hpp"
#include "cachedarrays/plan/program/program.hpp"
#include "cachedarrays/plan/program/roofline.hpp"

namespace cachedarrays::plan {

/// Each kernel's modeled seconds with every argument in the fast tier: the
/// time it gives the copies running beside it once the lookahead works.
/// One entry per kernel of `program`, in its order, timed by `model`.
[[nodiscard]] std::vector<double> fast_kernel_seconds(const Program& program, const KernelTimeModel& model,
                                                      emulation::Bandwidth fast_tier);

/// The lookahead choose_lookahead picks, and how many kernels it leaves short.
struct LookaheadChoice {
  std::uint32_t kernels = 0;  ///< how many kernels ahead to start copies
  /// Kernels whose arguments cannot be copied in time even from `max_kernels`
  /// ahead (a copy longer than everything before it in the iteration).
  std::uint32_t uncovered = 0;
};

/// The smallest window k such that for at least `coverage` of the kernels j
/// that have arguments, the copy of all of j's arguments (bytes /
/// `copy_gbps`, the worst case: every argument in the slow tier) fits in the
/// time of the k kernels before j; at least 1, at most `max_kernels`.
/// The iteration repeats: the kernels before the first ones are the last
/// ones of the iteration before. `kernel_seconds`: one entry per kernel
/// (fast_kernel_seconds). Throws
/// invalid_argument for a kernel_seconds of the wrong length or a negative
/// entry, a copy_gbps not > 0, or a coverage outside (0, 1].
[[nodiscard]] LookaheadChoice choose_lookahead(const Program& program, std::span<const double> kernel_seconds,
                                               double copy_gbps, double coverage = 0.95,
                                               std::uint32_t max_kernels = 256);

}  // namespace cachedarrays::plan

#ifdef CACHEDARRAYS_HEADER_ONLY
#include "cachedarrays/plan/schedule/lookahead-inl.hpp"
#endif
