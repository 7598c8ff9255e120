// cachedarrays: keep far more data than DRAM holds, at close to all-DRAM
// speed, by placing it across memory tiers as the program's hints say.
// This umbrella header is the one include a user needs.
#pragma once

#include "cachedarrays/error.hpp"
#include "cachedarrays/heap/dax_directory.hpp"
#include "cachedarrays/heap/device_spec.hpp"
#include "cachedarrays/heap/discover.hpp"
#include "cachedarrays/manager/copy_path.hpp"
#include "cachedarrays/manager/copy_settings.hpp"
#include "cachedarrays/manager/data_manager.hpp"
#include "cachedarrays/manager/emulation.hpp"
#include "cachedarrays/manager/fence.hpp"
#include "cachedarrays/manager/mover.hpp"
#include "cachedarrays/manager/stats.hpp"
#include "cachedarrays/manager/trace.hpp"
#include "cachedarrays/manager/two_level_memory.hpp"
#include "cachedarrays/plan/offsets/autotm_offsets.hpp"
#include "cachedarrays/plan/offsets/best_fit_offsets.hpp"
#include "cachedarrays/plan/offsets/dsa_mip.hpp"
#include "cachedarrays/plan/offsets/dsa_problem.hpp"
#include "cachedarrays/plan/offsets/dsa_search.hpp"
#include "cachedarrays/plan/offsets/offset_planner.hpp"
#include "cachedarrays/plan/offsets/smartpool_offsets.hpp"
#include "cachedarrays/plan/program/copy_channels.hpp"
#include "cachedarrays/plan/program/fast_tier_bound.hpp"
#include "cachedarrays/plan/program/kernel_profile.hpp"
#include "cachedarrays/plan/program/kernel_signature.hpp"
#include "cachedarrays/plan/program/online_profile.hpp"
#include "cachedarrays/plan/program/profiled_time.hpp"
#include "cachedarrays/plan/program/program.hpp"
#include "cachedarrays/plan/program/roofline.hpp"
#include "cachedarrays/plan/schedule/autoswap.hpp"
#include "cachedarrays/plan/schedule/autoswap_bo.hpp"
#include "cachedarrays/plan/schedule/autotm.hpp"
#include "cachedarrays/plan/schedule/copy_timeline.hpp"
#include "cachedarrays/plan/schedule/lookahead.hpp"
#include "cachedarrays/plan/schedule/plan_timing.hpp"
#include "cachedarrays/plan/schedule/redl.hpp"
#include "cachedarrays/policy/auto_policy.hpp"
#include "cachedarrays/policy/autoswap_policy.hpp"
#include "cachedarrays/policy/autotm_policy.hpp"
#include "cachedarrays/policy/builtin_policies.hpp"
#include "cachedarrays/policy/cachedarrays_policy.hpp"
#include "cachedarrays/policy/first_touch.hpp"
#include "cachedarrays/policy/hand_over.hpp"
#include "cachedarrays/policy/moves.hpp"
#include "cachedarrays/policy/planned_placement.hpp"
#include "cachedarrays/policy/policy.hpp"
#include "cachedarrays/policy/policy_descriptor.hpp"
#include "cachedarrays/policy/profiled_lookahead.hpp"
#include "cachedarrays/policy/redl_policy.hpp"
#include "cachedarrays/policy/registry.hpp"
#include "cachedarrays/policy/single_tier.hpp"
#include "cachedarrays/runtime/cached_array.hpp"
#include "cachedarrays/runtime/environment.hpp"
#include "cachedarrays/runtime/kernel.hpp"
#include "cachedarrays/runtime/program_tiers.hpp"
#include "cachedarrays/runtime/runtime.hpp"
#include "cachedarrays/sim/candidate_model.hpp"
#include "cachedarrays/sim/capacity_plan.hpp"
#include "cachedarrays/sim/memory_prices.hpp"
#include "cachedarrays/sim/replay.hpp"
#include "cachedarrays/sim/replay_judge.hpp"
#include "cachedarrays/sim/saved_program.hpp"
#include "cachedarrays/sim/simulate_2lm.hpp"
#include "cachedarrays/types.hpp"
#include "cachedarrays/version.hpp"

namespace cachedarrays::detail {

// The registry's "auto" ranks its candidates by replaying the recorded
// program (sim/candidate_model.hpp). The policy layer cannot name the sim
// layer above it, so the one header that sees every layer wires the two,
// once per process, before main runs.
inline const bool replay_candidate_model_installed = [] {
  policy::set_default_candidate_model(replay_candidate_model(default_candidate_plan_seconds));
  return true;
}();

}  // namespace cachedarrays::detail
