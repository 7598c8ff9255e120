// The headers whose implementation is in -inl files so far. The layers
// still compiled only into the library (block allocator, data manager,
// policies, runtime, sim) join as they are converted; then this is the
// umbrella header.
#pragma once

#include "cachedarrays/error.hpp"
#include "cachedarrays/heap/detail/heap_memory.hpp"
#include "cachedarrays/manager/detail/copy_engine.hpp"
#include "cachedarrays/manager/stats.hpp"
#include "cachedarrays/types.hpp"

#include <string>

// Both made by other_tu.cpp.
std::string default_dax_memory_of_other_tu();
std::string copy_and_report_in_other_tu();
