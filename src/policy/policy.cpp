#include "cachedarrays/policy/policy.hpp"

namespace cachedarrays::policy {

// Out of line so that Policy's vtable is emitted once, in the library.
Policy::~Policy() = default;

}  // namespace cachedarrays::policy
