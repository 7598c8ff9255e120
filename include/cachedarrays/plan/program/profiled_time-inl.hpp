// Implementation of profiled_time.hpp (header-only mode includes it from
// there; the compiled library from src/plan/plan.cpp).
#pragma once

#include "cachedarrays/config.hpp"
#include "cachedarrays/plan/program/profiled_time.hpp"

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "cachedarrays/error.hpp"

namespace cachedarrays::plan {

CACHEDARRAYS_INLINE ProfiledTime::ProfiledTime(const KernelProfiles& profiles, emulation::Bandwidth fast_tier,
                                               emulation::Bandwidth slow_tier, const KernelTimeModel& fallback)
    : profiles_(profiles), fast_tier_(fast_tier), slow_tier_(slow_tier), fallback_(fallback) {
  for (const emulation::Bandwidth& b : {fast_tier, slow_tier}) {
    if (!(b.read_gbps > 0) || !(b.write_gbps > 0)) {
      throw invalid_argument("cachedarrays: ProfiledTime needs tier bandwidths > 0 GB/s (got read " +
                             std::to_string(b.read_gbps) + ", write " + std::to_string(b.write_gbps) + ")");
    }
  }
}

CACHEDARRAYS_INLINE double ProfiledTime::slow_share(std::span<const ArgTraffic> args) const {
  const auto on = [&](emulation::Bandwidth tier) {
    std::vector<ArgTraffic> moved(args.begin(), args.end());
    for (ArgTraffic& a : moved) a.gbps = a.access == Access::write ? tier.write_gbps : tier.read_gbps;
    return memory_seconds(moved);
  };
  const double fast = on(fast_tier_);
  const double span = on(slow_tier_) - fast;
  // A kernel without bytes, or tiers of one speed: placement changes nothing.
  if (!(span > 0)) return 0.0;
  return (memory_seconds(args) - fast) / span;
}

CACHEDARRAYS_INLINE double ProfiledTime::seconds(std::string_view signature, std::span<const ArgTraffic> args) const {
  const KernelProfile* measured = profiles_.find(signature);
  if (measured == nullptr) return fallback_.seconds(signature, args);
  return measured->fast_seconds + slow_share(args) * (measured->slow_seconds - measured->fast_seconds);
}

namespace detail {

// The profiles and the two models that keep references to them, together.
class OwnedProfiledTime final : public KernelTimeModel {
 public:
  OwnedProfiledTime(KernelProfiles profiles, emulation::Bandwidth fast_tier, emulation::Bandwidth slow_tier)
      : profiles_(std::move(profiles)),
        roofline_(compute_rate(profiles_), fast_tier, &profiles_),
        profiled_(profiles_, fast_tier, slow_tier, roofline_) {}
  [[nodiscard]] double seconds(std::string_view signature, std::span<const ArgTraffic> args) const override {
    return profiled_.seconds(signature, args);
  }

 private:
  KernelProfiles profiles_;
  Roofline roofline_;
  ProfiledTime profiled_;
};

}  // namespace detail

CACHEDARRAYS_INLINE std::shared_ptr<const KernelTimeModel> profiled_time_model(KernelProfiles profiles,
                                                                               emulation::Bandwidth fast_tier,
                                                                               emulation::Bandwidth slow_tier) {
  return std::make_shared<detail::OwnedProfiledTime>(std::move(profiles), fast_tier, slow_tier);
}

}  // namespace cachedarrays::plan
