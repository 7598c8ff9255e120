// The replay simulator: runs the application-level events of a recorded
// Trace (create, hint, kernel, retire, collect) against another Runtime —
// other devices (typically virtual ones, so that the paper's 180 GB / 1.3 TB
// machines can be simulated here), another policy — without running any
// kernel. The target's Stats then show the traffic that policy would have
// caused, and a kernel time model (memory-bound unless another is given,
// such as the roofline of plan/program/roofline.hpp) turns it into seconds.
// Modeled figures are a model, not a measurement: label them as such.
#pragma once

#include "cachedarrays/config.hpp"

#include <cstdint>
#include <string>
#include <vector>

#include "cachedarrays/manager/stats.hpp"
#include "cachedarrays/manager/trace.hpp"
#include "cachedarrays/plan/program/copy_channels.hpp"
#include "cachedarrays/plan/program/roofline.hpp"

namespace cachedarrays {

class Runtime;

/// Where the replay was when an iteration of the trace began.
struct ReplayIterationMark {
  double seconds = 0;               ///< the compute timeline (CopyTimeline::now)
  double kernel_seconds = 0;        ///< every kernel so far
  double copy_seconds = 0;          ///< every copy so far
  double exposed_copy_seconds = 0;  ///< of which the kernels waited for
  Stats stats;                      ///< the target's counters so far (since the replay began)
};

/// What replay() gives: the target's counters and the modeled time, in
/// seconds, of the whole trace.
struct ReplayResult {
  Stats stats;  ///< the target's counters accumulated by the replay
  /// The end of the overlapped timeline (plan/schedule/copy_timeline.hpp): kernels and
  /// synchronous copies in turn, asynchronous copies beside them. Without
  /// asynchronous copies it is kernel_seconds + copy_seconds.
  double modeled_seconds = 0;
  double kernel_seconds = 0;        ///< every kernel's modeled time
  double copy_seconds = 0;          ///< every copy's and defrag move's time, hidden or not
  double exposed_copy_seconds = 0;  ///< copy time the kernels waited for
  std::uint64_t kernels = 0;        ///< kernel_begin events, scoped accesses included
  /// One per iteration event of the trace, in order.
  std::vector<ReplayIterationMark> iterations;
};

/// The steady state of a replay of several iterations, as a window over its
/// `marks` iteration events: the iterations from mark `first` to mark `end`
/// (excluded), i.e. from the third iteration to the second to last. The
/// first starts cold (the parameters just created, nothing moved yet; a
/// planning policy also departs from its plan, which is of a later
/// iteration) and the second from where that left things; the last one's
/// copies made ahead for an iteration that never comes meet no kernel. What
/// lies between is what a training run repeats. Of 2 or 3 iterations, the
/// second to last alone; of fewer, an empty window: the whole replay. A
/// trace of several iterations: nn::dry_run_trace's `iterations`.
struct SteadyWindow {
  /// @var first
  /// The mark the window starts at: its first iteration's.
  /// @var end
  /// The mark the window ends at (excluded): the iteration after its last.
  std::size_t first = 0, end = 0;
  /// How many iterations the window holds (0: empty, the whole replay).
  [[nodiscard]] std::size_t iterations() const noexcept { return end - first; }
};
/// The steady window over `marks` iteration events (see SteadyWindow).
[[nodiscard]] SteadyWindow steady_window(std::size_t marks) noexcept;

/// The steady state's figures per iteration (their mean), and the target's
/// counters summed over its `iterations`.
struct ReplayIteration {
  double seconds = 0;               ///< modeled seconds per iteration
  double kernel_seconds = 0;        ///< kernel time per iteration
  double copy_seconds = 0;          ///< copy time per iteration, hidden or not
  double exposed_copy_seconds = 0;  ///< copy time per iteration the kernels waited for
  Stats stats;                      ///< the target's counters over the window's iterations
  std::size_t iterations = 1;       ///< iterations in the window (1 when it is the whole replay)
};
/// The steady iteration of `result` (steady_window over its iteration marks;
/// the whole replay when the window is empty).
[[nodiscard]] ReplayIteration steady_iteration(const ReplayResult& result);

/// Replays the application-level events of `trace` against `target` without
/// running kernels. Every kernel_begin is one kernel: its arguments are hinted
/// and pinned through the target exactly as the recorded run did
/// (Runtime::acquire_all, or Runtime::acquire for "read()"/"write()" scoped
/// accesses), and unpinned at the matching kernel_end (scoped accesses, which
/// have no end event, at once). Trace object ids are mapped to the target's
/// objects; an event naming an id the trace never created (or already
/// retired) throws invalid_argument naming the event's index. Objects still
/// alive at the end are retired.
///
/// Time model: a kernel takes `kernel_time`'s seconds for its name (its
/// signature, plan/program/kernel_signature.hpp) and its arguments, each with the
/// bandwidth of the device it is on once pinned (read bandwidth for inputs,
/// write bandwidth for outputs). Without one, kernels are memory-bound
/// (plan::MemoryBound: the sum over the arguments of bytes / bandwidth);
/// plan::Roofline adds the compute bound. A copy takes
/// bytes / min(source read, destination write bandwidth), on the compute
/// timeline when the policy made it synchronously, else on one of the
/// target's mover threads (DataManager::mover_options) beside the kernels,
/// a background copy (a write-back made ahead) behind the copies issued
/// before a thread takes it; a kernel waits for copies in flight on its arguments, and a source region
/// stays taken until its copy lands, so an allocation that finds its device
/// full of landing sources waits (plan/schedule/copy_timeline.hpp). `models[d]` is device d's model;
/// there must be one per target device, each bandwidth > 0. `kernel_time`
/// (kept for the call, not copied) may be null. The replay records the
/// target's copies through its manager's trace hook and restores the hook
/// after.
[[nodiscard]] ReplayResult replay(const Trace& trace, Runtime& target, const std::vector<DeviceModel>& models,
                                  const plan::KernelTimeModel* kernel_time = nullptr);

/// Seconds the copies counted in `stats` take under `models` (the copy part
/// of replay()'s time model).
[[nodiscard]] double modeled_copy_seconds(const Stats& stats, const std::vector<DeviceModel>& models);

}  // namespace cachedarrays

#ifdef CACHEDARRAYS_HEADER_ONLY
#include "cachedarrays/sim/replay-inl.hpp"
#endif
