// What both translation units include: the umbrella header (the whole
// library in header-only mode) and the internals the test reaches into.
#pragma once

#include "cachedarrays/cachedarrays.hpp"
#include "cachedarrays/heap/detail/heap_memory.hpp"
#include "cachedarrays/manager/detail/copy_engine.hpp"

#include <string>

// Both made by other_tu.cpp.
std::string default_dax_memory_of_other_tu();
std::string copy_and_report_in_other_tu();
