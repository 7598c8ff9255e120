// Implementation of online_profile.hpp (header-only mode includes it from
// there; the compiled library from src/plan/plan.cpp).
#pragma once

#include "cachedarrays/config.hpp"
#include "cachedarrays/plan/program/online_profile.hpp"

#include <utility>
#include <vector>

#include "cachedarrays/error.hpp"
#include "cachedarrays/plan/program/profiled_time.hpp"

namespace cachedarrays::plan {

CACHEDARRAYS_INLINE std::string profile_key(const Program& program, std::uint32_t kernel) {
  if (kernel >= program.kernels().size()) {
    throw invalid_argument("cachedarrays: profile_key: kernel " + std::to_string(kernel) + " of a program of " +
                           std::to_string(program.kernels().size()) + " kernels; give one in [0, " +
                           std::to_string(program.kernels().size()) + ")");
  }
  const ProgramKernel& k = program.kernels()[kernel];
  if (k.name != unnamed_kernel) return k.name;
  std::string key = std::string(unnamed_kernel) + "#" + std::to_string(kernel) + "(";
  for (std::size_t a = 0; a < k.args.size(); ++a) {
    if (a > 0) key += ',';
    key += std::to_string(k.args[a].bytes);
    key += k.args[a].access == Access::write ? 'w' : 'r';
  }
  return key + ")";
}

CACHEDARRAYS_INLINE Program profile_keyed(const Program& program) {
  std::vector<ProgramKernel> kernels = program.kernels();
  for (std::uint32_t k = 0; k < kernels.size(); ++k) kernels[k].name = profile_key(program, k);
  return Program(program.objects(), std::move(kernels), program.steps());
}

namespace detail {

// The profiles and the models that keep references to them, together.
class OwnedOnlineTime final : public KernelTimeModel {
 public:
  OwnedOnlineTime(KernelProfiles profiles, emulation::Bandwidth fast_tier, emulation::Bandwidth slow_tier)
      : profiles_(std::move(profiles)), profiled_(profiles_, fast_tier, slow_tier, memory_bound_) {}
  [[nodiscard]] double seconds(std::string_view signature, std::span<const ArgTraffic> args) const override {
    return profiled_.seconds(signature, args);
  }

 private:
  KernelProfiles profiles_;
  MemoryBound memory_bound_;
  ProfiledTime profiled_;
};

}  // namespace detail

CACHEDARRAYS_INLINE std::shared_ptr<const KernelTimeModel> online_time_model(KernelProfiles profiles,
                                                                             emulation::Bandwidth fast_tier,
                                                                             emulation::Bandwidth slow_tier) {
  return std::make_shared<detail::OwnedOnlineTime>(std::move(profiles), fast_tier, slow_tier);
}

}  // namespace cachedarrays::plan
