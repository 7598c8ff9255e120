// The kernel time model of a machine whose kernels were profiled (AutoTM,
// Hildebrand et al., ASPLOS 2020, section 3.5: a kernel takes the measured
// time of the configuration — where its inputs and outputs live — that it
// runs in). The profiles hold two configurations per kernel, every argument
// in the fast tier and every argument in the slow tier (kernel_profile.hpp);
// a placement in between is interpolated by the share of the memory time
// it moves to the slow tier:
//
//     t = fast_seconds + w * (slow_seconds - fast_seconds),
//     w = (memory(args) - memory(args in fast)) / (memory(args in slow) - memory(args in fast)),
//
// memory() being the bytes over each argument's tier bandwidth
// (roofline.hpp memory_seconds). It is exact at both measured ends, and in
// between wherever the slow tier charges each argument's bytes on their own
// (an emulated tier does: emulation::kernel_extra_ns); where a real tier
// hides memory time behind compute it is the linear reading of two points
// that AutoTM avoids by measuring every combination. A kernel without a
// profile takes the fallback model's time (a Roofline). Modeled figures are
// models: label them so.
#pragma once

#include "cachedarrays/config.hpp"

#include <memory>
#include <span>
#include <string_view>

#include "cachedarrays/manager/emulation.hpp"
#include "cachedarrays/plan/program/kernel_profile.hpp"
#include "cachedarrays/plan/program/roofline.hpp"

namespace cachedarrays::plan {

/// The profiled kernel time model: a kernel's measured all-fast and all-slow
/// times, interpolated by slow_share() for the placements in between; a
/// kernel without a profile takes the fallback model's time.
class ProfiledTime final : public KernelTimeModel {
 public:
  /// `profiles` and `fallback` are kept, not copied. `fast_tier` / `slow_tier`:
  /// the bandwidths of the tiers the profiles' fast and slow times were
  /// measured on (for an emulated tier, its emulated bandwidths). Throws
  /// invalid_argument for a bandwidth that is not > 0.
  ProfiledTime(const KernelProfiles& profiles, emulation::Bandwidth fast_tier, emulation::Bandwidth slow_tier,
               const KernelTimeModel& fallback);

  /// The profile's fast_seconds + slow_share(args) * (slow_seconds - fast_seconds),
  /// or the fallback's time for a kernel without a profile.
  [[nodiscard]] double seconds(std::string_view signature, std::span<const ArgTraffic> args) const override;

  /// The interpolation weight w above: 0 with every argument in the fast
  /// tier, 1 with every argument in the slow tier.
  [[nodiscard]] double slow_share(std::span<const ArgTraffic> args) const;

 private:
  const KernelProfiles& profiles_;
  emulation::Bandwidth fast_tier_;
  emulation::Bandwidth slow_tier_;
  const KernelTimeModel& fallback_;
};

/// ProfiledTime that owns its profiles, with the roofline calibrated on them
/// (compute_rate(profiles)) for kernels they lack: the model a planner keeps
/// (AutotmPolicyOptions::time_model). Throws what ProfiledTime and
/// compute_rate throw.
[[nodiscard]] std::shared_ptr<const KernelTimeModel> profiled_time_model(KernelProfiles profiles,
                                                                         emulation::Bandwidth fast_tier,
                                                                         emulation::Bandwidth slow_tier);

}  // namespace cachedarrays::plan

#ifdef CACHEDARRAYS_HEADER_ONLY
#include "cachedarrays/plan/program/profiled_time-inl.hpp"
#endif
