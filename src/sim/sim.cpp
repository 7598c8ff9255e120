// One TU per layer compiles its -inl files into the library; header-only users include them.
#include "cachedarrays/sim/candidate_model-inl.hpp"
#include "cachedarrays/sim/capacity_plan-inl.hpp"
#include "cachedarrays/sim/memory_prices-inl.hpp"
#include "cachedarrays/sim/replay-inl.hpp"
#include "cachedarrays/sim/replay_judge-inl.hpp"
#include "cachedarrays/sim/saved_program-inl.hpp"
#include "cachedarrays/sim/simulate_2lm-inl.hpp"
#include "cachedarrays/sim/trace_walker-inl.hpp"
