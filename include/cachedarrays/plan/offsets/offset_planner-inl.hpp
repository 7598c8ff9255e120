// Implementation of offset_planner.hpp (header-only mode includes it from
// there; the compiled library from src/plan/plan.cpp).
#pragma once

#include "cachedarrays/config.hpp"
#include "cachedarrays/plan/offsets/offset_planner.hpp"

#include "cachedarrays/error.hpp"
#include "cachedarrays/plan/offsets/best_fit_offsets.hpp"
#include "cachedarrays/plan/offsets/smartpool_offsets.hpp"

namespace cachedarrays::plan {

CACHEDARRAYS_INLINE OffsetPlanner parse_offset_planner(std::string_view name) {
  for (OffsetPlanner p :
       {OffsetPlanner::online, OffsetPlanner::best_fit, OffsetPlanner::smartpool, OffsetPlanner::mip}) {
    if (name == to_string(p)) return p;
  }
  throw invalid_argument("cachedarrays: unknown offset planner '" + std::string(name) +
                         "'; valid planners: online, best-fit, smartpool, mip");
}

CACHEDARRAYS_INLINE const char* to_string(OffsetPlanner planner) noexcept {
  switch (planner) {
    case OffsetPlanner::online: return "online";
    case OffsetPlanner::best_fit: return "best-fit";
    case OffsetPlanner::smartpool: return "smartpool";
    case OffsetPlanner::mip: return "mip";
  }
  return "?";
}

CACHEDARRAYS_INLINE OffsetPlan plan_offsets(const DsaProblem& problem, OffsetPlanner planner, const MipOptions& mip) {
  OffsetPlan plan;
  switch (planner) {
    case OffsetPlanner::online:
      throw invalid_argument(
          "cachedarrays: the online allocator makes no offset plan; pick best-fit, smartpool "
          "or mip");
    case OffsetPlanner::best_fit: plan = best_fit_offsets(problem); break;
    case OffsetPlanner::smartpool: plan = smartpool_offsets(problem, HoleFit::best); break;
    case OffsetPlanner::mip: plan = mip_offsets(problem, mip).plan; break;
  }
  check_plan(problem, plan);  // a plan is only executed if it is a solution
  return plan;
}

}  // namespace cachedarrays::plan
