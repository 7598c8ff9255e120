// One TU per layer compiles its -inl files into the library; header-only users include them.
#include "cachedarrays/heap/detail/bad_blocks-inl.hpp"
#include "cachedarrays/heap/detail/dax_memory-inl.hpp"
#include "cachedarrays/heap/detail/dram_memory-inl.hpp"
#include "cachedarrays/heap/detail/heap_memory-inl.hpp"
#include "cachedarrays/heap/detail/numa_memory-inl.hpp"
#include "cachedarrays/heap/detail/prefault-inl.hpp"
#include "cachedarrays/heap/detail/virtual_memory-inl.hpp"
#include "cachedarrays/heap/discover-inl.hpp"
