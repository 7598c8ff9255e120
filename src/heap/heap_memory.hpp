// Moved to cachedarrays/heap/detail/heap_memory.hpp (installed, for
// header-only users). Kept while files being converted elsewhere still
// include the old path (include/cachedarrays/heap/detail/heap.hpp,
// tests/heap_memory_tests.cpp, tests/negative_tests.cpp); remove once they
// include the new one.
#pragma once

#include "cachedarrays/heap/detail/heap_memory.hpp"
