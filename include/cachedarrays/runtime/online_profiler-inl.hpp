// Implementation of online_profiler.hpp (header-only mode includes it from
// there; the compiled library from src/runtime/runtime.cpp).
#pragma once

#include "cachedarrays/config.hpp"
#include "cachedarrays/runtime/online_profiler.hpp"

#include <algorithm>
#include <map>
#include <string>
#include <utility>

#include "cachedarrays/plan/program/online_profile.hpp"

namespace cachedarrays {

namespace detail {

// The median of `values` (not empty); of an even count, the mean of the two
// middle ones.
CACHEDARRAYS_INLINE double profile_median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

}  // namespace detail

CACHEDARRAYS_INLINE void OnlineProfiler::start(std::shared_ptr<const plan::Program> program) {
  program_ = std::move(program);
  by_kernel_.assign(program_ ? program_->kernels().size() : 0, {});
  runs_ = 0;
}

CACHEDARRAYS_INLINE void OnlineProfiler::add(std::uint64_t index, std::string_view name, std::size_t args,
                                             std::uint64_t bytes, double fast_seconds, double slow_seconds) {
  if (!program_ || index >= by_kernel_.size()) return;
  const plan::ProgramKernel& k = program_->kernels()[index];
  std::uint64_t expected = 0;
  for (const plan::ProgramArg& a : k.args) expected += a.bytes;
  if (k.name != name || k.args.size() != args || expected != bytes) return;
  by_kernel_[index].fast.push_back(fast_seconds);
  by_kernel_[index].slow.push_back(slow_seconds);
  ++runs_;
}

CACHEDARRAYS_INLINE plan::KernelProfiles OnlineProfiler::profiles(plan::MachineKey machine) const {
  plan::KernelProfiles result(std::move(machine));
  if (!program_) return result;
  // Runs by key: a named kernel's places in the program share one.
  std::map<std::string, std::pair<Runs, std::uint32_t>> by_key;  // the runs, and a kernel of the key
  for (std::uint32_t k = 0; k < by_kernel_.size(); ++k) {
    if (by_kernel_[k].fast.empty()) continue;
    auto& [runs, kernel] = by_key[plan::profile_key(*program_, k)];
    runs.fast.insert(runs.fast.end(), by_kernel_[k].fast.begin(), by_kernel_[k].fast.end());
    runs.slow.insert(runs.slow.end(), by_kernel_[k].slow.begin(), by_kernel_[k].slow.end());
    kernel = k;
  }
  for (const auto& [key, entry] : by_key) {
    const auto& [runs, kernel] = entry;
    plan::KernelProfile p;
    p.fast_seconds = detail::profile_median(runs.fast);
    p.slow_seconds = detail::profile_median(runs.slow);
    for (const plan::ProgramArg& a : program_->kernels()[kernel].args) {
      (a.access == Access::write ? p.bytes_written : p.bytes_read) += a.bytes;
    }
    result.set(key, p);
  }
  return result;
}

}  // namespace cachedarrays
