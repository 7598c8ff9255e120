// Implementation of redl_policy.hpp (header-only mode includes it from
// there; the compiled library from src/policy/policy.cpp).
#pragma once

#include "cachedarrays/config.hpp"
#include "cachedarrays/policy/redl_policy.hpp"

#include <cstdint>
#include <optional>
#include <string>

#include "cachedarrays/plan/redl.hpp"

namespace cachedarrays::policy {

CACHEDARRAYS_INLINE std::optional<PlannerHook> redl_planner(std::string_view policy_name) {
  if (policy_name != "redl") return std::nullopt;
  PlannerHook hook;
  hook.name = "redl";
  hook.description = "ReDL's liveness-based migration planner, period size searched";
  hook.plan = [](const PlanRequest& request) {
    plan::RedlOptions options;
    options.alignment = 0;  // fit_to_heap replays each plan on the heap: not redl_plan as well
    return fit_to_heap(request, [&](std::uint64_t limit) {
      options.fast_limit = limit;
      const plan::RedlPlan redl = plan::redl_plan(request.program, request.costs, options);
      // The retries plan at the period size the first search chose.
      options.period_layers = redl.period_layers;
      plan::AutotmPlan p = plan::redl_autotm_plan(redl);
      p.status = redl.status;
      return p;
    });
  };
  return hook;
}

}  // namespace cachedarrays::policy
