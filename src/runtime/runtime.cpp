// One TU per layer compiles its -inl files into the library; header-only users include them.
#include "cachedarrays/runtime/pinned_kernel-inl.hpp"
#include "cachedarrays/runtime/environment-inl.hpp"
#include "cachedarrays/runtime/memory_snapshot-inl.hpp"
#include "cachedarrays/runtime/online_profiler-inl.hpp"
#include "cachedarrays/runtime/program_tiers-inl.hpp"
#include "cachedarrays/runtime/runtime-inl.hpp"
#include "cachedarrays/runtime/snapshot_directory-inl.hpp"
#include "cachedarrays/runtime/unlocked_access-inl.hpp"
