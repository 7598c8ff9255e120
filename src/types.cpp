// One TU per layer compiles its -inl files into the library; header-only users include them.
#include "cachedarrays/error-inl.hpp"
#include "cachedarrays/types-inl.hpp"
