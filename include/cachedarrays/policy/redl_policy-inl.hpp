// Implementation of redl_policy.hpp (header-only mode includes it from
// there; the compiled library from src/policy/policy.cpp).
#pragma once

#include "cachedarrays/config.hpp"
#include "cachedarrays/policy/redl_policy.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cachedarrays/plan/redl.hpp"

namespace cachedarrays::policy {

CACHEDARRAYS_INLINE std::optional<PlannerHook> redl_planner(std::string_view policy_name) {
  if (policy_name != "redl") return std::nullopt;
  PlannerHook hook;
  hook.name = "redl";
  hook.description = "ReDL's liveness-based migration planner, period size searched";
  hook.plan = [](const PlanRequest& request) {
    // AutoTM's fragmentation loop (fit_to_heap) lowers the limit of every
    // kernel by the heap's overflow; ReDL's plan fragments the heap where it
    // is fullest, so the limit is lowered there only (fit_to_heap_by_kernel).
    // (Lowered everywhere, ResNet-50 b128 at 20% kept 1.27 of its 2.08 GiB
    // and modeled 1.27x all-fast; lowered where it overflows, 1.07x.)
    plan::RedlOptions options;
    options.alignment = 0;  // fit_to_heap_by_kernel replays each plan on the heap: not redl_plan as well
    options.fast_limit = request.dram_limit;
    // Two retries: a plan need not fit the heap exactly (the executor
    // defragments where a planned object finds no hole), and each retry
    // constrains the plan more. Modeled at 20% (cachedarrays-plan, six
    // models from ResNet-18 b32 to ResNet-50 b128), 2 retries gave the
    // lowest slowdown on every model, 4, 8 and 16 up to 0.14x more.
    constexpr std::uint32_t max_retries = 2;
    return fit_to_heap_by_kernel(
        request,
        [&](const std::vector<std::uint64_t>& kernel_limits) {
          options.kernel_limits = kernel_limits;
          const plan::RedlPlan redl = plan::redl_plan(request.program, request.costs, options);
          // The retries plan at the period size the first search chose.
          options.period_layers = redl.period_layers;
          return plan::redl_autotm_plan(redl);
        },
        max_retries);
  };
  return hook;
}

}  // namespace cachedarrays::policy
