// Implementation of roofline.hpp (header-only mode includes it from there;
// the compiled library from src/plan/plan.cpp).
#pragma once

#include "cachedarrays/config.hpp"
#include "cachedarrays/plan/program/roofline.hpp"

#include <algorithm>
#include <string>
#include <vector>

#include "cachedarrays/error.hpp"
#include "cachedarrays/plan/program/kernel_signature.hpp"

namespace cachedarrays::plan {

CACHEDARRAYS_INLINE double memory_seconds(std::span<const ArgTraffic> args) {
  double ns = 0;
  for (const ArgTraffic& a : args) {
    if (!(a.gbps > 0)) {
      throw invalid_argument("cachedarrays: a kernel argument of " + std::to_string(a.bytes) +
                             " bytes sits on a tier of bandwidth " + std::to_string(a.gbps) +
                             " GB/s; time models need bandwidths > 0");
    }
    ns += static_cast<double>(a.bytes) / a.gbps;
  }
  return ns * 1e-9;
}

CACHEDARRAYS_INLINE Roofline::Roofline(double flops_per_second, emulation::Bandwidth fast_tier,
                                       const KernelProfiles* calibration)
    : flops_per_second_(flops_per_second), fast_tier_(fast_tier), calibration_(calibration) {
  if (!(flops_per_second > 0) || !(fast_tier.read_gbps > 0) || !(fast_tier.write_gbps > 0)) {
    throw invalid_argument("cachedarrays: a Roofline needs a compute rate > 0 FLOP/s (got " +
                           std::to_string(flops_per_second) + ") and fast-tier bandwidths > 0 GB/s (got read " +
                           std::to_string(fast_tier.read_gbps) + ", write " + std::to_string(fast_tier.write_gbps) +
                           ")");
  }
}

CACHEDARRAYS_INLINE double Roofline::compute_seconds(std::string_view signature) const {
  return static_cast<double>(kernel_flops(signature)) / flops_per_second_;
}

CACHEDARRAYS_INLINE double Roofline::bound_seconds(std::string_view signature, std::span<const ArgTraffic> args) const {
  return std::max(compute_seconds(signature), memory_seconds(args));
}

CACHEDARRAYS_INLINE double Roofline::seconds(std::string_view signature, std::span<const ArgTraffic> args) const {
  const double bound = bound_seconds(signature, args);
  const KernelProfile* measured = calibration_ != nullptr ? calibration_->find(signature) : nullptr;
  if (measured == nullptr) return bound;
  std::vector<ArgTraffic> all_fast(args.begin(), args.end());
  for (ArgTraffic& a : all_fast) a.gbps = a.access == Access::write ? fast_tier_.write_gbps : fast_tier_.read_gbps;
  return measured->fast_seconds + bound - bound_seconds(signature, all_fast);
}

CACHEDARRAYS_INLINE double compute_rate(const KernelProfiles& profiles, double min_intensity) {
  double flops = 0;
  double seconds = 0;
  for (const auto& [signature, p] : profiles.kernels()) {
    const double bytes = static_cast<double>(p.bytes_read + p.bytes_written);
    if (p.flops == 0 || !(p.fast_seconds > 0) || static_cast<double>(p.flops) < min_intensity * bytes) continue;
    flops += static_cast<double>(p.flops);
    seconds += p.fast_seconds;
  }
  if (!(seconds > 0)) {
    throw invalid_argument("cachedarrays: compute_rate: none of the " + std::to_string(profiles.kernels().size()) +
                           " profiled kernels does at least " + std::to_string(min_intensity) +
                           " FLOPs per byte; profile a model with convolutions or inner products");
  }
  return flops / seconds;
}

}  // namespace cachedarrays::plan
