// The overlap model of the replay (DESIGN.md "What is known ahead"): one
// compute timeline, on which kernels and synchronous copies run one after
// the other, and one copy channel per device pair, on which the mover's
// asynchronous copies run in issue order beside the compute timeline. A
// kernel starts once the copies in flight into or out of its arguments
// have finished (invariant 7: it waits at their fences), a synchronous
// copy shares its device pair's channel with the asynchronous ones, and the
// iteration ends when both the kernels and the copies are done. The time
// the compute timeline spends in copies or waiting for them is the exposed
// copy time; the rest of the copy time is hidden behind kernels.
// Modeled figures: label them as such.
#pragma once

#include "cachedarrays/config.hpp"

#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "cachedarrays/manager/trace.hpp"
#include "cachedarrays/types.hpp"

namespace cachedarrays {

struct DeviceModel;

class CopyTimeline {
 public:
  // `models[d]`: device d's bandwidths (each > 0; replay checks them).
  explicit CopyTimeline(const std::vector<DeviceModel>& models);

  // A copy event of a trace (TraceKind::copy): detail 1 is asynchronous
  // (issued to the mover at the current compute time), else synchronous
  // (made by the compute thread). A TraceKind::defrag_move is a synchronous
  // copy from its device to itself (defrag slides regions on the caller's
  // thread).
  void copy(const TraceEvent& event);
  // A kernel of `seconds` on `objects` (trace ids): it waits for their
  // copies in flight, then runs.
  void kernel(std::span<const std::uint64_t> objects, double seconds);

  // Where the compute timeline is: the end of the last kernel or
  // synchronous copy.
  [[nodiscard]] double now() const noexcept { return compute_; }
  // When the last kernel and the last copy are done.
  [[nodiscard]] double seconds() const noexcept;
  // Compute time spent in synchronous copies or waiting for asynchronous ones.
  [[nodiscard]] double exposed_copy_seconds() const noexcept { return exposed_; }
  // Every copy's own time, hidden or not.
  [[nodiscard]] double copy_seconds() const noexcept { return copying_; }

 private:
  double copy_time(DeviceId src, DeviceId dst, std::uint64_t bytes) const;
  double& channel(DeviceId src, DeviceId dst);
  double ready(std::uint64_t object) const;

  const std::vector<DeviceModel>& models_;
  double compute_ = 0;
  double exposed_ = 0;
  double copying_ = 0;
  std::vector<double> channel_free_;                    // by src * devices + dst
  std::unordered_map<std::uint64_t, double> ready_at_;  // object -> its last copy's end
};

}  // namespace cachedarrays

#ifdef CACHEDARRAYS_HEADER_ONLY
#include "cachedarrays/sim/copy_timeline-inl.hpp"
#endif
