// How long a kernel takes with its arguments where they are: the kernel
// time models of the replay simulator (sim/replay.hpp) and of planners.
// docs/design.md "What is known ahead": modeled kernel time is a roofline — the
// larger of the FLOPs over the measured compute rate and the bytes over each
// argument's tier bandwidth — calibrated on this machine. Modeled figures
// are models: label them so.
#pragma once

#include "cachedarrays/config.hpp"

#include <cstdint>
#include <span>
#include <string_view>

#include "cachedarrays/manager/emulation.hpp"
#include "cachedarrays/plan/program/kernel_profile.hpp"
#include "cachedarrays/types.hpp"

namespace cachedarrays::plan {

/// One argument as a time model sees it: its bytes, whether the kernel reads
/// or writes it, and the bandwidth (GB/s = bytes per ns) of its tier for that
/// access (the read bandwidth for an input, the write bandwidth for an output).
struct ArgTraffic {
  std::uint64_t bytes = 0;       ///< the argument's size in bytes
  Access access = Access::read;  ///< whether the kernel reads or writes it
  double gbps = 0;               ///< its tier's bandwidth for that access, GB/s; must be > 0
};

/// How long a kernel takes with its arguments in given tiers: the interface
/// the replay simulator and the planners time kernels through.
class KernelTimeModel {
 public:
  virtual ~KernelTimeModel() = default;  ///< A model is used through this base.
  /// Seconds kernel `signature` (kernel_signature.hpp; a trace's kernel name)
  /// takes with its arguments as `args` places them.
  [[nodiscard]] virtual double seconds(std::string_view signature, std::span<const ArgTraffic> args) const = 0;
};

/// The sum over the arguments of bytes / bandwidth: the memory side of the
/// roofline. Throws invalid_argument for a bandwidth that is not > 0.
[[nodiscard]] double memory_seconds(std::span<const ArgTraffic> args);

/// Every kernel memory-bound: memory_seconds alone (the replay's model when
/// it is given none).
class MemoryBound final : public KernelTimeModel {
 public:
  /// memory_seconds(args), whatever the kernel.
  [[nodiscard]] double seconds(std::string_view, std::span<const ArgTraffic> args) const override {
    return memory_seconds(args);
  }
};

/// The roofline: max(FLOPs / compute rate, memory_seconds), the FLOPs read
/// from the signature (a kernel without them is memory-bound).
///
/// Calibration (a kernel with a measured profile): the roofline leaves out
/// what a kernel costs besides its compute and its traffic — the call into
/// oneDNN, threads waking, pinning — and the measured compute rate is an
/// average over kernels. So a profiled kernel takes its measured all-fast
/// time plus what the roofline adds for this placement over all-fast:
///
///     fast_seconds + bound(args) - bound(args moved to the fast tier).
///
/// The correction is an offset, not a factor: a small kernel whose time is
/// mostly fixed cost does not pay that cost again, scaled, when its bytes
/// move to a slower tier. Only the fast-tier time calibrates; the slow-tier
/// time of the profile is left to check the model against (bench/
/// model_accuracy).
class Roofline final : public KernelTimeModel {
 public:
  /// `flops_per_second`: the machine's compute rate (compute_rate()).
  /// `fast_tier`: the bandwidths of the tier the calibration's fast_seconds
  /// were measured on. `calibration` (kept, not copied; null: none): measured
  /// profiles. Throws invalid_argument for a rate or bandwidth not > 0.
  Roofline(double flops_per_second, emulation::Bandwidth fast_tier, const KernelProfiles* calibration = nullptr);

  /// bound_seconds(signature, args), calibrated as above when `signature`
  /// has a profile in the calibration. Throws invalid_argument for a
  /// bandwidth not > 0 (memory_seconds).
  [[nodiscard]] double seconds(std::string_view signature, std::span<const ArgTraffic> args) const override;

  /// The uncalibrated compute time: the signature's FLOPs / the rate (0 without FLOPs).
  [[nodiscard]] double compute_seconds(std::string_view signature) const;
  /// The uncalibrated roofline: max(compute_seconds, memory_seconds(args)).
  [[nodiscard]] double bound_seconds(std::string_view signature, std::span<const ArgTraffic> args) const;

  /// The compute rate the roofline was built with, FLOPs per second.
  [[nodiscard]] double flops_per_second() const noexcept { return flops_per_second_; }

 private:
  double flops_per_second_;
  emulation::Bandwidth fast_tier_;
  const KernelProfiles* calibration_;
};

/// This machine's compute rate from a profile: the FLOPs over the fast-tier
/// seconds summed over the kernels of at least `min_intensity` FLOPs per byte
/// moved (convolutions and inner products; the memory-bound kernels would
/// understate it). An achieved rate, not a peak: the roofline of the kernels
/// it is measured on then matches their time on average. Throws
/// invalid_argument when no kernel qualifies.
[[nodiscard]] double compute_rate(const KernelProfiles& profiles, double min_intensity = 8.0);

}  // namespace cachedarrays::plan

#ifdef CACHEDARRAYS_HEADER_ONLY
#include "cachedarrays/plan/program/roofline-inl.hpp"
#endif
