// Implementation of autoswap_policy.hpp (header-only mode includes it from
// there; the compiled library from src/policy/policy.cpp).
#pragma once

#include "cachedarrays/config.hpp"
#include "cachedarrays/policy/autoswap_policy.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "cachedarrays/plan/schedule/autoswap_bo.hpp"
#include "cachedarrays/types.hpp"

namespace cachedarrays::policy {

CACHEDARRAYS_INLINE plan::MovePlan autoswap_executable(const plan::Program& program, const plan::AutoswapPlan& swaps) {
  plan::MovePlan p;
  const std::vector<plan::ProgramKernel>& kernels = program.kernels();
  p.in_fast.resize(kernels.size());
  for (std::size_t k = 0; k < kernels.size(); ++k) p.in_fast[k].assign(kernels[k].args.size(), true);
  for (const plan::AutoswapSwap& s : swaps.swaps) {
    const plan::AutoswapCandidate& c = s.candidate;
    p.moves.push_back({c.object, c.out_kernel, false, true});
    p.moves.push_back({c.object, s.in_kernel, true, true});
  }
  std::stable_sort(p.moves.begin(), p.moves.end(),
                   [](const plan::TierMove& a, const plan::TierMove& b) { return a.kernel < b.kernel; });
  p.modeled_seconds = swaps.iteration_seconds + swaps.overhead_seconds;
  p.optimal = false;
  p.status = std::to_string(swaps.swaps.size()) + " swaps of " + std::to_string(swaps.candidates) +
             " candidates, memory load " + format_bytes(swaps.peak) + " (from " + format_bytes(swaps.original_peak) +
             ")" + (swaps.fits ? "" : ", over the limit by " + format_bytes(swaps.excess) + ": no candidate left");
  return p;
}

CACHEDARRAYS_INLINE PlannerHook autoswap_planner(plan::AutoswapScore score) {
  PlannerHook hook;
  hook.name = std::string("autoswap:") + plan::to_string(score);
  hook.description = std::string("AutoSwap's swap planner, score ") + plan::to_string(score);
  hook.plan = [score](const PlanRequest& request) {
    plan::AutoswapOptions options;
    options.score = score;
    options.limit = request.dram_limit;
    std::string weights;
    if (score == plan::AutoswapScore::bo) {
      // §IV-C: the weights of equation (3) by Bayesian optimisation over
      // the modeled overhead, at the heap's limit; the retries of the heap
      // fitting keep them.
      plan::AutoswapBoOptions bo;  // no line per evaluation: the plan's status gives the weights found
      const plan::AutoswapBoResult result =
          plan::autoswap_optimise_weights(request.program, request.costs, options, bo);
      options.bo_weights = result.weights;
      char text[96];
      std::snprintf(text, sizeof text, "; BO weights a=%.2f b=%.2f c=%.2f d=%.2f", result.weights[0], result.weights[1],
                    result.weights[2], result.weights[3]);
      weights = text;
    }
    plan::MovePlan p = fit_to_heap(request, [&](std::uint64_t limit) {
      options.limit = limit;
      return autoswap_executable(request.program, plan::autoswap_plan(request.program, request.costs, options));
    });
    p.status += weights;
    return p;
  };
  return hook;
}

}  // namespace cachedarrays::policy
