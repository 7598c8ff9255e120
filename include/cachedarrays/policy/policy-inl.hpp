// Implementation of policy.hpp (header-only mode includes it from there; the
// compiled library from src/policy/policy.cpp).
#pragma once

#include "cachedarrays/config.hpp"
#include "cachedarrays/policy/policy.hpp"

namespace cachedarrays::policy {

// Out of line so that Policy's vtable is emitted once, in the library.
CACHEDARRAYS_INLINE Policy::~Policy() = default;

}  // namespace cachedarrays::policy
