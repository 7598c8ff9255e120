// One TU per layer compiles its -inl files into the library; header-only users include them.
#include "cachedarrays/runtime/pinned_kernel-inl.hpp"
#include "cachedarrays/runtime/runtime-inl.hpp"
