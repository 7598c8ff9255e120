// Implementation of copy_timeline.hpp (header-only mode includes it from there;
// the compiled library from src/sim/sim.cpp).
#pragma once

#include "cachedarrays/config.hpp"
#include "cachedarrays/sim/copy_timeline.hpp"

#include <algorithm>

#include "cachedarrays/sim/replay.hpp"

namespace cachedarrays {

CACHEDARRAYS_INLINE CopyTimeline::CopyTimeline(const std::vector<DeviceModel>& models)
    : models_(models), channel_free_(models.size() * models.size(), 0.0) {}

CACHEDARRAYS_INLINE double CopyTimeline::copy_time(DeviceId src, DeviceId dst, std::uint64_t bytes) const {
  const double gbps = std::min(models_.at(src).read_gbps, models_.at(dst).write_gbps);
  return static_cast<double>(bytes) / gbps * 1e-9;
}

CACHEDARRAYS_INLINE double& CopyTimeline::channel(DeviceId src, DeviceId dst) {
  return channel_free_.at(std::size_t{src} * models_.size() + dst);
}

CACHEDARRAYS_INLINE double CopyTimeline::ready(std::uint64_t object) const {
  const auto it = ready_at_.find(object);
  return it == ready_at_.end() ? 0.0 : it->second;
}

CACHEDARRAYS_INLINE void CopyTimeline::copy(const TraceEvent& e) {
  // A defrag move slides a region down its own heap, on the compute thread.
  const bool defrag = e.kind == TraceKind::defrag_move;
  const DeviceId dst = defrag ? e.device : e.device2;
  const double t = copy_time(e.device, dst, e.bytes);
  copying_ += t;
  double& free_at = channel(e.device, dst);
  if (!defrag && e.detail == 1) {  // the mover: after what its channel already carries
    const double start = std::max(compute_, free_at);
    free_at = start + t;
    ready_at_[e.object] = std::max(ready(e.object), free_at);
    return;
  }
  // The compute thread: it settles the object's copy in flight first, and
  // shares the device pair's bandwidth with the mover.
  const double start = std::max({compute_, free_at, ready(e.object)});
  exposed_ += start + t - compute_;
  compute_ = start + t;
  free_at = compute_;
}

CACHEDARRAYS_INLINE void CopyTimeline::kernel(std::span<const std::uint64_t> objects, double seconds) {
  double start = compute_;
  for (std::uint64_t o : objects) start = std::max(start, ready(o));
  exposed_ += start - compute_;
  compute_ = start + seconds;
}

CACHEDARRAYS_INLINE double CopyTimeline::seconds() const noexcept {
  double end = compute_;
  for (double f : channel_free_) end = std::max(end, f);
  return end;
}

}  // namespace cachedarrays
