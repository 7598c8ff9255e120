#include "cachedarrays/nn/planned_footprint.hpp"

#include <memory>

#include "cachedarrays/heap/device_spec.hpp"
#include "cachedarrays/nn/trainer.hpp"
#include "cachedarrays/policy/cachedarrays_policy.hpp"
#include "cachedarrays/runtime/runtime.hpp"

namespace cachedarrays::nn {

PlannedFootprint measure_planned_footprint(const std::function<Graph()>& build, const plan::Program& program,
                                           plan::OffsetPlanner planner, const TrainerOptions& options) {
  policy::Mode mode = policy::mode::LM;
  mode.offsets = planner;
  auto owned = std::make_unique<policy::CachedArraysPolicy>(mode);  // throws for online
  const policy::CachedArraysPolicy& ca = *owned;
  // Virtual heaps store nothing; the fast one is large enough that nothing
  // is ever evicted, so its peak extent is the plan's doing alone.
  Runtime runtime({virtual_device(std::uint64_t{1} << 42, "fast"), virtual_device(std::uint64_t{1} << 42, "slow")},
                  std::move(owned));
  runtime.set_program(program);
  PlannedFootprint result;
  {
    Trainer trainer(&runtime, build(), options, /*run_kernels=*/false);
    // The first iteration may create a few objects the later ones do not
    // (it departs from the program), so the second is planned from it and
    // the third from the second: the peak of all three.
    for (int i = 0; i < 3; ++i) {
      (void)trainer.step({}, {});
      runtime.collect();
    }
    const policy::PlannedPlacement& placement = *ca.planned_placement();
    result.planned = placement.footprint();
    result.lower_bound = placement.lower_bound();
    result.counters = placement.counters();
  }
  result.footprint = runtime.stats().devices[0].peak_extent;
  return result;
}

}  // namespace cachedarrays::nn
