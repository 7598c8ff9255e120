// The copy hardware that every model of "copies running beside kernels"
// shares (docs/design.md "What is known ahead"): the replay's timeline
// (copy_timeline.hpp), AutoSwap's engine (autoswap.hpp), ReDL's simulator
// (redl.hpp) and AutoTM's move costs (autotm.hpp) all take their copy times,
// channels and lanes from here, so that a planner's estimate and the replay
// of its plan charge a copy the same.
//
// The model, as the mover (manager/mover.hpp) runs copies:
//   - a copy from device s to device d takes bytes / min(read(s), write(d));
//   - each ordered device pair is a channel that carries one copy at a time;
//   - the mover has `lanes` threads, each making one copy at a time, in the
//     order issued; a copy starts once it is issued, its channel is free and
//     a lane is free, and takes the lane that frees first (the mover's
//     threads take copies off one queue);
//   - the compute thread may copy too (a synchronous copy): it shares the
//     channel with the mover but takes no lane.
// One lane is one copy engine for both directions (AutoSwap's and ReDL's
// papers); no lane limit (lanes = 0) leaves each channel its own engine, as
// a duplex link has one each way.
// Modeled figures: label them as such.
#pragma once

#include "cachedarrays/config.hpp"

#include <cstdint>
#include <string>
#include <vector>

#include "cachedarrays/types.hpp"

namespace cachedarrays::plan {

/// When a modeled copy starts and ends, in modeled seconds.
struct CopySpan {
  double start = 0;  ///< when it starts
  double end = 0;    ///< when it lands
};

/// The copy hardware of every overlap model: one channel per ordered device
/// pair at the slower of the source's read and the target's write bandwidth,
/// one copy at a time on each; the mover's lanes, one copy at a time on
/// each. Modeled figures, not measured.
class CopyChannels {
 public:
  /// Channels between `devices` (bandwidths each > 0: callers check them,
  /// naming their own option) and `lanes` mover threads (0: no limit but
  /// the channels', each channel its own engine).
  CopyChannels(const std::vector<DeviceModel>& devices, unsigned lanes);

  /// Two tiers, the fast one device 0 and the slow one device 1, by their
  /// copy bandwidths (GB/s, each > 0): out of the fast tier `to_slow_gbps`,
  /// into it `to_fast_gbps`.
  [[nodiscard]] static CopyChannels two_tiers(double to_slow_gbps, double to_fast_gbps, unsigned lanes);

  static constexpr DeviceId fast = 0;  ///< the fast tier of two_tiers()
  static constexpr DeviceId slow = 1;  ///< the slow tier of two_tiers()

  /// The bandwidth of channel src -> dst, GB/s.
  [[nodiscard]] double gbps(DeviceId src, DeviceId dst) const;
  /// How long a copy of `bytes` from src to dst takes on its channel alone.
  [[nodiscard]] double seconds(DeviceId src, DeviceId dst, std::uint64_t bytes) const;

  /// When a copy on the mover would start: no earlier than `earliest`, once
  /// its channel and a lane are free.
  [[nodiscard]] double mover_start(DeviceId src, DeviceId dst, double earliest) const;
  /// A copy of `seconds` on the mover, from mover_start(src, dst, earliest),
  /// on the lane that frees first.
  CopySpan run_on_mover(DeviceId src, DeviceId dst, double seconds, double earliest);
  /// A copy of `seconds` by the compute thread: on its channel, no lane,
  /// from `earliest` or when the channel frees.
  CopySpan run_on_caller(DeviceId src, DeviceId dst, double seconds, double earliest);

  /// When channel src -> dst is next free.
  [[nodiscard]] double channel_free(DeviceId src, DeviceId dst) const;
  /// When every channel is free: the last copy's end (0 before any).
  [[nodiscard]] double idle_at() const;
  /// Moves every channel and lane `by` seconds earlier, not before 0: the
  /// copies an iteration leaves running, as the next iteration (starting at
  /// 0) finds them.
  void carry_over(double by);

  /// The devices' count.
  [[nodiscard]] std::size_t devices() const noexcept { return devices_; }

 private:
  CopyChannels(std::size_t devices, std::vector<double> gbps, unsigned lanes);
  [[nodiscard]] std::size_t index(DeviceId src, DeviceId dst) const;

  std::size_t devices_ = 0;
  std::vector<double> gbps_;          // by src * devices + dst
  std::vector<double> channel_free_;  // by src * devices + dst
  std::vector<double> lane_free_;     // by mover thread
};

}  // namespace cachedarrays::plan

#ifdef CACHEDARRAYS_HEADER_ONLY
#include "cachedarrays/plan/program/copy_channels-inl.hpp"
#endif
