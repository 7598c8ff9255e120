// cachedarrays: keep far more data than DRAM holds, at close to all-DRAM
// speed, by placing it across memory tiers as the program's hints say.
// This umbrella header is the one include a user needs.
#pragma once

#include "cachedarrays/cached_array.hpp"
#include "cachedarrays/device_spec.hpp"
#include "cachedarrays/emulation.hpp"
#include "cachedarrays/error.hpp"
#include "cachedarrays/kernel.hpp"
#include "cachedarrays/manager/data_manager.hpp"
#include "cachedarrays/manager/replay.hpp"
#include "cachedarrays/manager/stats.hpp"
#include "cachedarrays/manager/trace.hpp"
#include "cachedarrays/manager/two_level_memory.hpp"
#include "cachedarrays/policy/cachedarrays_policy.hpp"
#include "cachedarrays/policy/first_touch.hpp"
#include "cachedarrays/policy/moves.hpp"
#include "cachedarrays/policy/policy.hpp"
#include "cachedarrays/policy/registry.hpp"
#include "cachedarrays/policy/single_tier.hpp"
#include "cachedarrays/runtime.hpp"
#include "cachedarrays/version.hpp"
