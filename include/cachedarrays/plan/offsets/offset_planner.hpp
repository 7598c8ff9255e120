// Which offset planner a policy or a command line uses, by name: the online
// allocator (no plan), Sekiyama et al.'s best-fit offset lines (Sekiyama et al.
// §3.2, best_fit_offsets.hpp), SmartPool's weighted interval colouring
// (SmartPool/AutoSwap §III-B, smartpool_offsets.hpp) or the exact MIP (Sekiyama et al.
// §3.1, dsa_mip.hpp) under a time limit.
#pragma once

#include "cachedarrays/config.hpp"

#include <cstdint>
#include <string>
#include <string_view>

#include "cachedarrays/plan/offsets/dsa_mip.hpp"
#include "cachedarrays/plan/offsets/dsa_problem.hpp"

namespace cachedarrays::plan {

/// An offset planner, or none.
enum class OffsetPlanner : std::uint8_t {
  online,     ///< no plan: each object where the block allocator puts it when it is created
  best_fit,   ///< best_fit_offsets
  smartpool,  ///< smartpool_offsets with best-fit holes (the paper's default)
  mip,        ///< mip_offsets from the best heuristic, under MipOptions' time limit
};

/// The planner of a name: "online", "best-fit", "smartpool", "mip"; throws
/// invalid_argument naming the valid names.
[[nodiscard]] OffsetPlanner parse_offset_planner(std::string_view name);
/// The planner's name as parse_offset_planner reads it.
[[nodiscard]] const char* to_string(OffsetPlanner planner) noexcept;

/// The plan of `planner` for `problem`, checked with check_plan; `mip`
/// configures the MIP planner. `online` has no plan: invalid_argument.
[[nodiscard]] OffsetPlan plan_offsets(const DsaProblem& problem, OffsetPlanner planner, const MipOptions& mip = {});

}  // namespace cachedarrays::plan

#ifdef CACHEDARRAYS_HEADER_ONLY
#include "cachedarrays/plan/offsets/offset_planner-inl.hpp"
#endif
