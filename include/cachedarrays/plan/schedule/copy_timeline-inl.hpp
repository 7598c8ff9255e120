// Implementation of copy_timeline.hpp (header-only mode includes it from there;
// the compiled library from src/plan/plan.cpp).
#pragma once

#include "cachedarrays/config.hpp"
#include "cachedarrays/plan/schedule/copy_timeline.hpp"

#include <algorithm>
#include <utility>
#include <vector>

namespace cachedarrays::plan {

CACHEDARRAYS_INLINE CopyTimeline::CopyTimeline(const std::vector<DeviceModel>& models, std::vector<DeviceUsage> room,
                                               unsigned mover_threads)
    : channels_(models, std::max(1U, mover_threads)), idle_(channels_), room_given_(room), room_(std::move(room)) {
  landing_.resize(room_.size());
}

CACHEDARRAYS_INLINE CopyTimeline::CopyTimeline(CopyChannels channels, std::size_t objects)
    : channels_(channels), idle_(std::move(channels)), dense_ready_(objects, 0.0) {}

CACHEDARRAYS_INLINE void CopyTimeline::reset() {
  channels_ = idle_;
  compute_ = exposed_ = copying_ = 0;
  ready_at_.clear();
  std::fill(dense_ready_.begin(), dense_ready_.end(), 0.0);
  room_ = room_given_;
  for (std::vector<Landing>& l : landing_) l.clear();
  leaving_.clear();
  wait_ = {};
  queued_.clear();
  queued_for_.clear();
  issued_background_ = 0;
}

CACHEDARRAYS_INLINE double& CopyTimeline::ready_slot(std::uint64_t object) {
  return object < dense_ready_.size() ? dense_ready_[object] : ready_at_[object];
}

CACHEDARRAYS_INLINE CopySpan CopyTimeline::run_on_mover(DeviceId src, DeviceId dst, std::uint64_t bytes,
                                                        std::uint64_t object, double earliest) {
  const CopySpan span = channels_.run_on_mover(src, dst, channels_.seconds(src, dst, bytes), earliest);
  double& ready = ready_slot(object);
  ready = std::max(ready, span.end);
  return span;
}

CACHEDARRAYS_INLINE void CopyTimeline::start_background_through(std::uint64_t seq) {
  while (!queued_.empty() && queued_.front().seq <= seq) {
    const Queued q = queued_.front();
    queued_.pop_front();
    const double end = run_on_mover(q.src, q.dst, q.bytes, q.object, std::max(q.issued, q.room)).end;
    if (const auto it = queued_for_.find(q.object); it != queued_for_.end() && it->second == q.seq) {
      queued_for_.erase(it);
    }
    // Its source, held or still to be freed, lands now that its end is known.
    if (const auto it = leaving_.find(q.object); it != leaving_.end() && it->second.seq == q.seq) {
      it->second = {q.src, end, 0};
    }
    if (q.src < landing_.size()) {
      for (Landing& l : landing_[q.src]) {
        if (l.seq == q.seq) l = {end, l.bytes, 0};
      }
    }
  }
}

CACHEDARRAYS_INLINE void CopyTimeline::start_background(double before) {
  while (!queued_.empty()) {
    const Queued& q = queued_.front();
    // Not before `before`: a copy issued then goes first.
    if (channels_.mover_start(q.src, q.dst, std::max(q.issued, q.room)) >= before) return;
    start_background_through(q.seq);
  }
}

CACHEDARRAYS_INLINE double CopyTimeline::ready(std::uint64_t object) {
  if (const auto it = queued_for_.find(object); it != queued_for_.end()) start_background_through(it->second);
  if (object < dense_ready_.size()) return dense_ready_[object];
  const auto it = ready_at_.find(object);
  return it == ready_at_.end() ? 0.0 : it->second;
}

CACHEDARRAYS_INLINE double CopyTimeline::room_at(DeviceId device) {
  start_background(compute_);
  std::vector<Landing>& landing = landing_[device];
  const DeviceUsage& room = room_[device];
  const auto held = [&] {
    std::uint64_t bytes = 0;
    for (const Landing& l : landing) bytes += l.bytes;
    return bytes;
  };
  // What landed before now holds nothing any more.
  const auto drop_landed = [&] {
    std::erase_if(landing, [&](const Landing& l) { return l.seq == 0 && l.at <= compute_; });
  };
  drop_landed();
  if (room.bytes_used + held() <= room.capacity) return compute_;
  // Short of room: the background copies still queued out of this device
  // start (their end says when their sources free).
  std::uint64_t last = 0;
  for (const Landing& l : landing) last = std::max(last, l.seq);
  if (last != 0) {
    start_background_through(last);
    drop_landed();
  }
  std::uint64_t bytes = held();
  std::sort(landing.begin(), landing.end(), [](const Landing& a, const Landing& b) { return a.at < b.at; });
  double at = compute_;
  for (const Landing& l : landing) {
    if (room.bytes_used + bytes <= room.capacity) break;
    at = l.at;
    bytes -= l.bytes;
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
  if (it == leaving_.end() || it->second.device != e.device) return;
  if (it->second.seq != 0 || it->second.end > compute_) {
    landing_[e.device].push_back({it->second.end, e.bytes, it->second.seq});
  }
  leaving_.erase(it);
}

CACHEDARRAYS_INLINE void CopyTimeline::copy(const TraceEvent& e) {
  // A defrag move slides a region down its own heap, on the compute thread.
  const bool defrag = e.kind == TraceKind::defrag_move;
  const DeviceId dst = defrag ? e.device : e.device2;
  copying_ += channels_.seconds(e.device, dst, e.bytes);
  const bool background = !defrag && e.detail == trace_copy_background;
  if (background || (!defrag && e.detail == trace_copy_async)) {  // the mover
    // Into a region that waits for room: once the room is there.
    double room = 0;
    if (wait_.pending && wait_.device == dst) {
      room = wait_.until;
      wait_.pending = false;
    } else {
      settle_wait();
    }
    if (background) {  // behind whatever is issued before a thread takes it
      queued_.push_back({++issued_background_, e.device, dst, e.bytes, e.object, compute_, room});
      queued_for_[e.object] = issued_background_;
      if (!room_.empty()) leaving_[e.object] = {e.device, 0, issued_background_};
      return;
    }
    start_background(compute_);
    const double end = run_on_mover(e.device, dst, e.bytes, e.object, std::max(compute_, room)).end;
    if (!room_.empty()) leaving_[e.object] = {e.device, end, 0};
    return;
  }
  settle_wait();
  start_background(compute_);
  // The compute thread: it settles the object's copy in flight first, and
  // shares the device pair's bandwidth with the mover.
  const double settled = ready(e.object);
  const double end =
      channels_.run_on_caller(e.device, dst, channels_.seconds(e.device, dst, e.bytes), std::max(compute_, settled))
          .end;
  exposed_ += end - compute_;
  compute_ = end;
}

CACHEDARRAYS_INLINE double CopyTimeline::run_kernel(std::span<const std::uint64_t> objects, double seconds) {
  settle_wait();
  double start = compute_;
  for (std::uint64_t o : objects) start = std::max(start, ready(o));
  exposed_ += start - compute_;
  compute_ = start + seconds;
  return start;
}

CACHEDARRAYS_INLINE CopySpan CopyTimeline::copy_async(DeviceId src, DeviceId dst, std::uint64_t bytes,
                                                      std::uint64_t object, double earliest) {
  // As a trace's asynchronous copy: issued now, after a pending wait for room.
  settle_wait();
  start_background(compute_);
  copying_ += channels_.seconds(src, dst, bytes);
  const CopySpan span = run_on_mover(src, dst, bytes, object, std::max(compute_, earliest));
  if (!room_.empty()) leaving_[object] = {src, span.end, 0};
  return span;
}

CACHEDARRAYS_INLINE void CopyTimeline::copy_background(DeviceId src, DeviceId dst, std::uint64_t bytes,
                                                       std::uint64_t object) {
  // As a trace's background copy (copy() above): queued, not started.
  settle_wait();
  copying_ += channels_.seconds(src, dst, bytes);
  queued_.push_back({++issued_background_, src, dst, bytes, object, compute_, 0});
  queued_for_[object] = issued_background_;
  if (!room_.empty()) leaving_[object] = {src, 0, issued_background_};
}

CACHEDARRAYS_INLINE CopySpan CopyTimeline::copy_sync(DeviceId src, DeviceId dst, std::uint64_t bytes,
                                                     std::uint64_t object) {
  // As a trace's synchronous copy: the object's copy in flight first.
  settle_wait();
  start_background(compute_);
  copying_ += channels_.seconds(src, dst, bytes);
  const double settled = ready(object);
  const CopySpan span =
      channels_.run_on_caller(src, dst, channels_.seconds(src, dst, bytes), std::max(compute_, settled));
  exposed_ += span.end - compute_;
  compute_ = span.end;
  return span;
}

CACHEDARRAYS_INLINE double CopyTimeline::wait_until(double at) {
  settle_wait();
  if (at > compute_) {
    exposed_ += at - compute_;
    compute_ = at;
  }
  return compute_;
}

CACHEDARRAYS_INLINE double CopyTimeline::landed(std::uint64_t object) { return ready(object); }

CACHEDARRAYS_INLINE double CopyTimeline::mover_start(DeviceId src, DeviceId dst, double earliest) const {
  return channels_.mover_start(src, dst, std::max(compute_, earliest));
}

CACHEDARRAYS_INLINE void CopyTimeline::carry_over(double by) {
  // A background copy a thread would take before `by` starts then, as it
  // would on one timeline; the channels' times, once shifted, start at 0
  // and could not place it there.
  start_background(by);
  compute_ = std::max(0.0, compute_ - by);
  channels_.carry_over(by);
  for (double& r : dense_ready_) r -= by;
  for (auto& [object, r] : ready_at_) r -= by;
  for (std::vector<Landing>& landing : landing_) {
    for (Landing& l : landing) l.at -= by;
  }
  for (auto& [object, l] : leaving_) l.end -= by;
  for (Queued& q : queued_) {
    q.issued -= by;
    q.room -= by;
  }
  wait_.until -= by;
}

CACHEDARRAYS_INLINE double CopyTimeline::seconds() const {
  if (!queued_.empty()) {
    CopyTimeline drained = *this;
    drained.start_background_through(queued_.back().seq);
    return drained.seconds();
  }
  return std::max(compute_, channels_.idle_at());
}

}  // namespace cachedarrays::plan
