// One TU per layer compiles its -inl files into the library; header-only users include them.
#include "cachedarrays/manager/detail/copy_engine-inl.hpp"
#include "cachedarrays/manager/stats-inl.hpp"
