// Implementation of copy_timeline.hpp (header-only mode includes it from there;
// the compiled library from src/sim/sim.cpp).
#pragma once

#include "cachedarrays/config.hpp"
#include "cachedarrays/sim/copy_timeline.hpp"

#include <algorithm>
#include <utility>
#include <vector>

#include "cachedarrays/sim/replay.hpp"

namespace cachedarrays {

CACHEDARRAYS_INLINE CopyTimeline::CopyTimeline(const std::vector<DeviceModel>& models, std::vector<DeviceUsage> room,
                                                unsigned mover_threads)
    : models_(models),
      channel_free_(models.size() * models.size(), 0.0),
      lane_free_(std::max(1U, mover_threads), 0.0),
      room_(std::move(room)) {
  landing_.resize(room_.size());
}

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

CACHEDARRAYS_INLINE double CopyTimeline::room_at(DeviceId device) {
  std::vector<Landing>& landing = landing_[device];
  // What landed before now holds nothing any more.
  std::erase_if(landing, [&](const Landing& l) { return l.at <= compute_; });
  std::uint64_t held = 0;
  for (const Landing& l : landing) held += l.bytes;
  const DeviceUsage& room = room_[device];
  if (room.bytes_used + held <= room.capacity) return compute_;
  std::sort(landing.begin(), landing.end(), [](const Landing& a, const Landing& b) { return a.at < b.at; });
  double at = compute_;
  for (const Landing& l : landing) {
    if (room.bytes_used + held <= room.capacity) break;
    at = l.at;
    held -= l.bytes;
  }
  return at;
}

CACHEDARRAYS_INLINE void CopyTimeline::settle_wait() {
  if (!wait_.pending) return;
  wait_.pending = false;
  if (wait_.until <= compute_) return;
  exposed_ += wait_.until - compute_;
  compute_ = wait_.until;
}

CACHEDARRAYS_INLINE void CopyTimeline::allocate(const TraceEvent& e) {
  settle_wait();
  if (e.device >= room_.size()) return;
  room_[e.device].bytes_used += e.bytes;
  const double at = room_at(e.device);
  if (at > compute_) wait_ = {.pending = true, .device = e.device, .until = at};
}

CACHEDARRAYS_INLINE void CopyTimeline::free(const TraceEvent& e) {
  if (e.device >= room_.size()) return;
  DeviceUsage& room = room_[e.device];
  room.bytes_used -= std::min(room.bytes_used, e.bytes);
  // Its own copy out of this region still reads it: held until it lands.
  const auto it = leaving_.find(e.object);
  if (it == leaving_.end() || it->second.first != e.device) return;
  if (it->second.second > compute_) landing_[e.device].push_back({it->second.second, e.bytes});
  leaving_.erase(it);
}

CACHEDARRAYS_INLINE void CopyTimeline::copy(const TraceEvent& e) {
  // A defrag move slides a region down its own heap, on the compute thread.
  const bool defrag = e.kind == TraceKind::defrag_move;
  const DeviceId dst = defrag ? e.device : e.device2;
  const double t = copy_time(e.device, dst, e.bytes);
  copying_ += t;
  double& free_at = channel(e.device, dst);
  if (!defrag && e.detail == 1) {  // the mover: after what its channel already carries
    // and, into a region that waits for room, once the room is there; on
    // the mover thread that frees first (each makes one copy at a time, in
    // the order queued).
    double room = 0;
    if (wait_.pending && wait_.device == dst) {
      room = wait_.until;
      wait_.pending = false;
    } else {
      settle_wait();
    }
    const auto lane = std::min_element(lane_free_.begin(), lane_free_.end());
    const double start = std::max({compute_, free_at, room, *lane});
    free_at = *lane = start + t;
    ready_at_[e.object] = std::max(ready(e.object), free_at);
    if (!room_.empty()) leaving_[e.object] = {e.device, free_at};
    return;
  }
  settle_wait();
  // The compute thread: it settles the object's copy in flight first, and
  // shares the device pair's bandwidth with the mover.
  const double start = std::max({compute_, free_at, ready(e.object)});
  exposed_ += start + t - compute_;
  compute_ = start + t;
  free_at = compute_;
}

CACHEDARRAYS_INLINE void CopyTimeline::kernel(std::span<const std::uint64_t> objects, double seconds) {
  settle_wait();
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
