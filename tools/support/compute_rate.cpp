#include "support/compute_rate.hpp"

#include <omp.h>

#include <cachedarrays/plan/program/roofline.hpp>

namespace cachedarrays::tools {

nn::ProfilerOptions profiler_options() {
  nn::ProfilerOptions options;
  options.compute_threads = static_cast<unsigned>(omp_get_max_threads());
  return options;
}

RatePerCore rate_per_core(const nn::ModelConfig& config, const std::string& profile_cache) {
  RatePerCore r;
  const plan::KernelProfiles profiles =
      nn::profile_model([&] { return nn::build_model(config); }, profile_cache, profiler_options(), &r.measured);
  r.cores = profiles.key().cores;
  r.flops_per_second = plan::compute_rate(profiles) / r.cores;
  r.kernels = profiles.kernels().size();
  return r;
}

}  // namespace cachedarrays::tools
