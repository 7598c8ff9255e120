// Implementation of profiled_lookahead.hpp (header-only mode includes it
// from there; the compiled library from src/policy/policy.cpp).
#pragma once

#include "cachedarrays/config.hpp"
#include "cachedarrays/policy/profiled_lookahead.hpp"

#include <vector>

#include "cachedarrays/plan/program/profiled_time.hpp"
#include "cachedarrays/plan/program/roofline.hpp"

namespace cachedarrays::policy {

CACHEDARRAYS_INLINE Lookahead profiled_lookahead(const plan::Program& program, const plan::KernelProfiles& profiles,
                                                 emulation::Bandwidth fast_tier, emulation::Bandwidth slow_tier,
                                                 plan::LookaheadChoice* choice) {
  const plan::Roofline roofline(plan::compute_rate(profiles), fast_tier, &profiles);
  const plan::ProfiledTime model(profiles, fast_tier, slow_tier, roofline);
  const std::vector<double> seconds = plan::fast_kernel_seconds(program, model, fast_tier);
  const plan::LookaheadChoice chosen = plan::choose_lookahead(program, seconds, slow_tier.read_gbps);
  if (choice != nullptr) *choice = chosen;
  Lookahead lookahead;
  lookahead.kernels = chosen.kernels;
  return lookahead;
}

}  // namespace cachedarrays::policy
