// Moved to cachedarrays/manager/detail/copy_engine.hpp (installed, for
// header-only users). Kept while files being converted elsewhere still
// include the old path (src/manager/data_manager.cpp,
// tests/copy_engine_tests.cpp, bench/copy_bandwidth.cpp); remove once they
// include the new one.
#pragma once

#include "cachedarrays/manager/detail/copy_engine.hpp"
