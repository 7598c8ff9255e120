// One TU per layer compiles its -inl files into the library; header-only users include them.
#include "cachedarrays/plan/best_fit_offsets-inl.hpp"
#include "cachedarrays/plan/dsa_problem-inl.hpp"
#include "cachedarrays/plan/kernel_profile-inl.hpp"
#include "cachedarrays/plan/kernel_signature-inl.hpp"
#include "cachedarrays/plan/profiled_time-inl.hpp"
#include "cachedarrays/plan/program-inl.hpp"
#include "cachedarrays/plan/roofline-inl.hpp"
#include "cachedarrays/plan/smartpool_offsets-inl.hpp"
