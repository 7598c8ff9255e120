// Implementation of lookahead.hpp (header-only mode includes it from there;
// the compiled library from src/plan/plan.cpp).
#pragma once

#include "cachedarrays/config.hpp"
#include "cachedarrays/plan/schedule/lookahead.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "cachedarrays/error.hpp"

namespace cachedarrays::plan {

CACHEDARRAYS_INLINE std::vector<double> fast_kernel_seconds(const Program& program, const KernelTimeModel& model,
                                                            emulation::Bandwidth fast_tier) {
  std::vector<double> seconds;
  seconds.reserve(program.kernels().size());
  std::vector<ArgTraffic> args;
  for (const ProgramKernel& k : program.kernels()) {
    args.clear();
    for (const ProgramArg& a : k.args) {
      args.push_back({a.bytes, a.access, a.access == Access::write ? fast_tier.write_gbps : fast_tier.read_gbps});
    }
    seconds.push_back(model.seconds(k.name, args));
  }
  return seconds;
}

CACHEDARRAYS_INLINE LookaheadChoice choose_lookahead(const Program& program, std::span<const double> kernel_seconds,
                                                     double copy_gbps, double coverage, std::uint32_t max_kernels) {
  const std::vector<ProgramKernel>& kernels = program.kernels();
  if (kernel_seconds.size() != kernels.size()) {
    throw invalid_argument("cachedarrays: choose_lookahead got " + std::to_string(kernel_seconds.size()) +
                           " kernel times for a program of " + std::to_string(kernels.size()) +
                           " kernels; give one per kernel (fast_kernel_seconds)");
  }
  if (!(copy_gbps > 0) || !(coverage > 0 && coverage <= 1) || max_kernels == 0) {
    throw invalid_argument("cachedarrays: choose_lookahead needs a copy bandwidth > 0 GB/s (got " +
                           std::to_string(copy_gbps) + "), a coverage in (0, 1] (got " + std::to_string(coverage) +
                           ") and max_kernels >= 1");
  }
  // Per kernel with arguments: the window it needs (max_kernels + 1 when
  // none is enough).
  std::vector<std::uint32_t> needed;
  for (std::size_t j = 0; j < kernels.size(); ++j) {
    if (!(kernel_seconds[j] >= 0)) {
      throw invalid_argument("cachedarrays: choose_lookahead: kernel " + std::to_string(j) + " takes " +
                             std::to_string(kernel_seconds[j]) + " s; kernel times must be >= 0");
    }
    std::uint64_t bytes = 0;
    for (const ProgramArg& a : kernels[j].args) bytes += a.bytes;
    if (bytes == 0) continue;
    const double copy_seconds = static_cast<double>(bytes) / copy_gbps * 1e-9;
    double covered = 0;
    std::uint32_t k = 0;
    // Training repeats the iteration: before kernel 0 runs the last one.
    const std::size_t n = kernels.size();
    while (covered < copy_seconds && k < max_kernels && k + 1 < n) {
      ++k;
      covered += kernel_seconds[(j + n - k) % n];
    }
    needed.push_back(covered >= copy_seconds ? std::max<std::uint32_t>(k, 1) : max_kernels + 1);
  }
  LookaheadChoice choice{1, 0};
  if (needed.empty()) return choice;
  std::sort(needed.begin(), needed.end());
  const auto at = static_cast<std::size_t>(std::ceil(coverage * static_cast<double>(needed.size()))) - 1;
  choice.kernels = std::min(needed[std::min(at, needed.size() - 1)], max_kernels);
  choice.uncovered = static_cast<std::uint32_t>(
      std::count_if(needed.begin(), needed.end(), [&](std::uint32_t n) { return n > max_kernels; }));
  return choice;
}

}  // namespace cachedarrays::plan
