// What a planner weighs a plan by, on two tiers: each kernel's time with
// every argument in the fast tier, what each argument adds from the slow
// one, and the copy bandwidths between them. AutoTM's ILP (AutoTM §3.5),
// AutoSwap's swap scores, ReDL's simulator, the fast-tier bound and the
// planned policies all take one TierCosts, so that they weigh any plan
// alike; each planner's own knobs stay in its own options.
#pragma once

#include "cachedarrays/config.hpp"

#include <string_view>
#include <vector>

#include "cachedarrays/manager/emulation.hpp"
#include "cachedarrays/plan/program/copy_channels.hpp"
#include "cachedarrays/plan/program/program.hpp"
#include "cachedarrays/plan/program/roofline.hpp"

namespace cachedarrays::plan {

/// The time side of a two-tier plan: each kernel's time all in the fast
/// tier and what each of its arguments adds in the slow one, and the copy
/// bandwidths between the tiers.
struct TierCosts {
  std::vector<double> fast_seconds;               ///< by kernel: its time with every argument in the fast tier
  std::vector<std::vector<double>> slow_penalty;  ///< by kernel, by argument: seconds added when it is in the slow tier
  double to_slow_gbps = 0;                        ///< bandwidth of fast -> slow copies, GB/s
  double to_fast_gbps = 0;                        ///< bandwidth of slow -> fast copies, GB/s
  /// Copies made side by side: the executor's mover threads
  /// (MoverOptions::threads), each a lane of channels() (> 0).
  unsigned copy_lanes = 1;

  /// From a time model: fast_seconds with every argument at `fast`'s
  /// bandwidth, slow_penalty with one argument at `slow`'s instead. The copy
  /// bandwidths are the channels' (CopyChannels: the slower of the source's
  /// read and the target's write). Throws invalid_argument for a bandwidth
  /// not > 0.
  [[nodiscard]] static TierCosts from_model(const Program& program, const KernelTimeModel& model,
                                            const emulation::Bandwidth& fast, const emulation::Bandwidth& slow);

  /// The copy channels these bandwidths make (CopyChannels::two_tiers: the
  /// fast tier device 0, the slow one device 1) with copy_lanes lanes: the
  /// one definition of a copy's time and overlap that AutoTM's moves,
  /// AutoSwap's engine, ReDL's simulator and the replay share.
  [[nodiscard]] CopyChannels channels() const { return channels(copy_lanes); }
  /// The same channels with `lanes` lanes instead (0: one engine each way,
  /// as on a duplex link).
  [[nodiscard]] CopyChannels channels(unsigned lanes) const {
    return CopyChannels::two_tiers(to_slow_gbps, to_fast_gbps, lanes);
  }

  /// Throws invalid_argument, prefixed by `who`, unless these are costs of
  /// `program`: one time per kernel and one penalty per argument, each
  /// finite and >= 0, and both copy bandwidths finite and > 0.
  void check(const Program& program, std::string_view who) const;
};

}  // namespace cachedarrays::plan

#ifdef CACHEDARRAYS_HEADER_ONLY
#include "cachedarrays/plan/program/tier_costs-inl.hpp"
#endif
