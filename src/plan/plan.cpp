// One TU per layer compiles its -inl files into the library; header-only users include them.
#include "cachedarrays/plan/program-inl.hpp"
