// This machine's compute rate, measured on a model's kernels, for the tools
// and benchmarks that model other machines by scaling it (cachedarrays-plan's
// --cores, paper_reproduction's paper configurations).
#pragma once

#include <cstddef>
#include <string>

#include <cachedarrays/nn/models.hpp>
#include <cachedarrays/nn/profiler.hpp>

namespace cachedarrays::tools {

// Profiler options keyed by the threads oneDNN's kernels run on here (its
// OpenMP setting): profiles measured on other threads are not these.
nn::ProfilerOptions profiler_options();

// This machine's achieved compute rate on a model's convolutions, per core
// (plan::compute_rate over its kernel profiles): what the modeled machines
// scale by their core count.
struct RatePerCore {
  double flops_per_second = 0;  // per core
  unsigned cores = 0;           // the compute threads profiled on
  std::size_t kernels = 0;      // profiled
  bool measured = false;        // profiled now, not loaded
};

// The rate of `config`'s kernels, from `profile_cache` or measured into it.
RatePerCore rate_per_core(const nn::ModelConfig& config, const std::string& profile_cache);

}  // namespace cachedarrays::tools
