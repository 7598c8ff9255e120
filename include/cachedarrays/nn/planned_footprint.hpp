// The footprint of training under an offset plan (issue 12): what the fast
// tier must hold for all of training to stay in it when the objects of each
// iteration are placed where an offset planner put them
// (policy/planned_placement.hpp), next to measure_footprint's figure for
// the online allocator.
#pragma once

#include <cstdint>
#include <functional>

#include "cachedarrays/nn/graph.hpp"
#include "cachedarrays/plan/offset_planner.hpp"
#include "cachedarrays/plan/program.hpp"
#include "cachedarrays/policy/planned_placement.hpp"

namespace cachedarrays::nn {

struct PlannedFootprint {
  // The peak extent of the fast heap over a dry run of three iterations under
  // ca-lm+<planner> with `program` set (as train_cnn runs it): a fast tier
  // of this many bytes holds every object where the plan puts it.
  std::uint64_t footprint = 0;
  // The plan's own figures: base (parameters, momentum) plus the plan's
  // footprint, and base plus max-live.
  std::uint64_t planned = 0;
  std::uint64_t lower_bound = 0;
  policy::PlannedPlacement::Counters counters;  // over the three iterations
};

// `program`: the iteration's program (dry_run_program(build)). `planner`:
// not online (invalid_argument).
[[nodiscard]] PlannedFootprint measure_planned_footprint(const std::function<Graph()>& build,
                                                         const plan::Program& program, plan::OffsetPlanner planner);

}  // namespace cachedarrays::nn
