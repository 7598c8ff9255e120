// The footprint of training under an offset plan: what the fast tier must
// hold for all of training to stay in it when the objects of each
// iteration are placed where an offset planner put them
// (policy/planned_placement.hpp), next to measure_footprint's figure for
// the online allocator.
#pragma once

#include <cstdint>
#include <functional>

#include "cachedarrays/nn/graph.hpp"
#include "cachedarrays/nn/trainer.hpp"
#include "cachedarrays/plan/offsets/offset_planner.hpp"
#include "cachedarrays/plan/program/program.hpp"
#include "cachedarrays/policy/planned_placement.hpp"

namespace cachedarrays::nn {

/// The fast-tier footprint of training under an offset plan, as
/// measure_planned_footprint() finds it, with the plan's own figures beside it.
struct PlannedFootprint {
  /// The peak extent of the fast heap over a dry run of three iterations under
  /// `ca-lm+<planner>` with `program` set (as train_cnn runs it): a fast tier
  /// of this many bytes holds every object where the plan puts it.
  std::uint64_t footprint = 0;
  /// The plan's own footprint in bytes, plus the base (parameters and
  /// the optimizer's state) that lives across iterations.
  std::uint64_t planned = 0;
  /// The base plus the plan's max-live bytes: no plan of the iteration can
  /// need less.
  std::uint64_t lower_bound = 0;
  /// The placement's counters over the three iterations (objects planned,
  /// unplanned, collisions, ...).
  policy::PlannedPlacement::Counters counters;
};

/// Measures PlannedFootprint by a dry run of three iterations of the graph
/// `build` makes, on virtual heaps (no memory, no kernels). `program`: the
/// iteration's program (dry_run_program(build, options)). `planner`: the offset
/// planner to place by; throws invalid_argument for the online one.
/// `options`: how the model trains (its optimizer's state is part of the
/// base that lives across iterations).
[[nodiscard]] PlannedFootprint measure_planned_footprint(const std::function<Graph()>& build,
                                                         const plan::Program& program, plan::OffsetPlanner planner,
                                                         const TrainerOptions& options = {});

}  // namespace cachedarrays::nn
