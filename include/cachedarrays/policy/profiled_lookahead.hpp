// The A modes' lookahead chosen from kernel profiles (k chosen
// automatically from the profiles) rather than the fixed default
// of Lookahead: kernels take their profiled all-fast time
// (plan::ProfiledTime; the calibrated roofline for kernels without a
// profile), a copy into fast memory the slow tier's read bandwidth, and
// plan::choose_lookahead picks the window that lets 95% of the kernels'
// copies land in time. The byte budget stays Lookahead's default share of
// the fast tier.
#pragma once

#include "cachedarrays/config.hpp"

#include "cachedarrays/manager/emulation.hpp"
#include "cachedarrays/plan/program/kernel_profile.hpp"
#include "cachedarrays/plan/program/program.hpp"
#include "cachedarrays/plan/schedule/lookahead.hpp"
#include "cachedarrays/policy/cachedarrays_policy.hpp"

namespace cachedarrays::policy {

/// The A modes' Lookahead for `program`, its window chosen from the kernels'
/// `profiles` (plan::choose_lookahead), its byte budget Lookahead's default.
/// `fast_tier` / `slow_tier`: the bandwidths the profiles' fast and slow
/// times were measured at. `choice`, when given, receives the planner's
/// answer (the window and the kernels no window covers). Throws
/// invalid_argument when the profiles hold no compute-dense kernel
/// (plan::compute_rate) or a bandwidth is not > 0.
[[nodiscard]] Lookahead profiled_lookahead(const plan::Program& program, const plan::KernelProfiles& profiles,
                                           emulation::Bandwidth fast_tier, emulation::Bandwidth slow_tier,
                                           plan::LookaheadChoice* choice = nullptr);

}  // namespace cachedarrays::policy

#ifdef CACHEDARRAYS_HEADER_ONLY
#include "cachedarrays/policy/profiled_lookahead-inl.hpp"
#endif
