// cachedarrays: keep far more data than DRAM holds, at close to all-DRAM
// speed, by placing it across memory tiers as the program's hints say.
// This umbrella header is the one include a user needs.
#pragma once

#include "cachedarrays/error.hpp"
#include "cachedarrays/heap/device_spec.hpp"
#include "cachedarrays/manager/data_manager.hpp"
#include "cachedarrays/manager/emulation.hpp"
#include "cachedarrays/manager/fence.hpp"
#include "cachedarrays/manager/mover.hpp"
#include "cachedarrays/manager/stats.hpp"
#include "cachedarrays/manager/trace.hpp"
#include "cachedarrays/manager/two_level_memory.hpp"
#include "cachedarrays/plan/program.hpp"
#include "cachedarrays/policy/cachedarrays_policy.hpp"
#include "cachedarrays/policy/first_touch.hpp"
#include "cachedarrays/policy/moves.hpp"
#include "cachedarrays/policy/policy.hpp"
#include "cachedarrays/policy/registry.hpp"
#include "cachedarrays/policy/single_tier.hpp"
#include "cachedarrays/runtime/cached_array.hpp"
#include "cachedarrays/runtime/kernel.hpp"
#include "cachedarrays/runtime/runtime.hpp"
#include "cachedarrays/sim/replay.hpp"
#include "cachedarrays/sim/simulate_2lm.hpp"
#include "cachedarrays/types.hpp"
#include "cachedarrays/version.hpp"
