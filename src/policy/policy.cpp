// One TU per layer compiles its -inl files into the library; header-only users include them.
#include "cachedarrays/policy/autotm_policy-inl.hpp"
#include "cachedarrays/policy/cachedarrays_policy-inl.hpp"
#include "cachedarrays/policy/first_touch-inl.hpp"
#include "cachedarrays/policy/moves-inl.hpp"
#include "cachedarrays/policy/planned_placement-inl.hpp"
#include "cachedarrays/policy/policy-inl.hpp"
#include "cachedarrays/policy/profiled_lookahead-inl.hpp"
#include "cachedarrays/policy/registry-inl.hpp"
