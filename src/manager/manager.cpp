// One TU per layer compiles its -inl files into the library; header-only users include them.
#include "cachedarrays/manager/data_manager-inl.hpp"
#include "cachedarrays/manager/data_manager_async-inl.hpp"
#include "cachedarrays/manager/mover-inl.hpp"
#include "cachedarrays/manager/detail/copy_engine-inl.hpp"
#include "cachedarrays/manager/emulation-inl.hpp"
#include "cachedarrays/manager/stats-inl.hpp"
#include "cachedarrays/manager/trace-inl.hpp"
#include "cachedarrays/manager/two_level_memory-inl.hpp"
