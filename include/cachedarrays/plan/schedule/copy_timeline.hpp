// The overlap model of the replay (docs/design.md "What is known ahead"): one
// compute timeline, on which kernels and synchronous copies run one after
// the other, and the mover's threads beside it, each making one
// asynchronous copy at a time in the order issued (manager/mover.hpp: a
// copy in queued behind a write-back waits for it), each device pair
// carrying one copy at a time: the copy channels of copy_channels.hpp,
// which the planners' own models share. A kernel starts once the copies in flight
// into or out of its arguments have finished (invariant 7: it waits at
// their fences), a synchronous copy shares its device pair with the
// asynchronous ones, and the iteration ends when both the kernels and the
// copies are done. The time the compute timeline spends in copies or
// waiting for them is the exposed copy time; the rest of the copy time is
// hidden behind kernels. A background copy (CopyPriority::background: the
// write-backs made ahead) waits, as on the mover, behind every copy issued
// before it starts: it is queued, and starts once a thread is free before
// the next copy is issued, or when something needs its end (a kernel on its
// object, the room its source holds, the end of the iteration).
//
// Given the devices' room, it also keeps what the mover does with the
// source of a copy it has not landed yet: the source region stays taken
// until the copy lands (a write-back's DRAM cannot take a new object while
// its bytes are still being read). The target a replay runs against makes
// its copies at once and frees the source as soon as the policy asks, so
// the timeline holds those bytes itself, from the free to the copy's end:
// an allocation that finds its device full of landing sources waits for
// enough of them to land — an asynchronous copy into it starts no earlier
// (AutotmPolicy puts such a move off, it does not wait), anything else
// (a creation, a synchronous copy) waits on the compute timeline, as the
// policies' make_room settles the write-backs in flight.
//
// The planners drive the same timeline (AutoSwap's engine, ReDL's
// simulator, plan_timing.hpp's time of any MovePlan): copies of known bytes
// on the mover or the compute thread, kernels that wait for their objects'
// copies, and waits of their own rules (what a kernel waits for stays each
// planner's: design.md "What is known ahead"), so that a planner's estimate
// and the replay charge one plan on one clock. A planner numbers its
// objects densely and names how many, so their copies' ends are kept in a
// vector, and reuses one timeline across runs (reset), allocating nothing
// on its hot path.
// Modeled figures: label them as such.
#pragma once

#include "cachedarrays/config.hpp"

#include <cstdint>
#include <deque>
#include <span>
#include <unordered_map>
#include <vector>

#include "cachedarrays/error.hpp"
#include "cachedarrays/manager/trace.hpp"
#include "cachedarrays/plan/program/copy_channels.hpp"
#include "cachedarrays/types.hpp"

namespace cachedarrays::plan {

/// The replay's overlap model: one compute timeline for kernels and
/// synchronous copies, and the mover's threads beside it for asynchronous
/// copies, each device pair carrying one copy at a time; a kernel waits for
/// the copies in flight on its arguments. Modeled figures, not measured.
class CopyTimeline {
 public:
  /// `models[d]`: device d's bandwidths (each > 0; replay checks them).
  /// `room[d]`: device d's capacity and bytes in use when the timeline
  /// starts, for the hold of landing sources; empty: no hold, the
  /// room is the target's alone. `mover_threads`: the mover's copy lanes
  /// (MoverOptions::threads; 0 counts as 1).
  explicit CopyTimeline(const std::vector<DeviceModel>& models, std::vector<DeviceUsage> room = {},
                        unsigned mover_threads = 1);
  /// A planner's timeline on `channels` as they are (their lanes: 0, one
  /// engine per channel), with no hold of landing sources. Objects below
  /// `objects` (a planner's dense numbering) keep their copies' ends in a
  /// vector; any other id works too, in a map.
  explicit CopyTimeline(CopyChannels channels, std::size_t objects = 0);

  /// Back to the state it was made in (idle channels, time 0, the room as
  /// given), keeping its buffers: a planner reruns one timeline.
  void reset();

  /// A copy event of a trace (TraceKind::copy): its detail says who makes
  /// it (trace_copy_async: issued to the mover at the current compute time;
  /// trace_copy_background: the same, behind the copies issued before it
  /// starts; else made by the compute thread). A TraceKind::defrag_move is a
  /// synchronous copy from its device to itself (defrag slides regions on
  /// the caller's thread).
  void copy(const TraceEvent& event);
  /// A kernel of `seconds` on `objects` (trace ids): it waits for their
  /// copies in flight, then runs.
  void kernel(std::span<const std::uint64_t> objects, double seconds) { (void)run_kernel(objects, seconds); }
  /// A TraceKind::allocate event of the target, in order with its copies:
  /// the bytes its device now holds; when landing sources leave no room, the
  /// allocation waits for them to land (an asynchronous copy into the device
  /// right after it starts no earlier; else the compute timeline waits).
  /// Ignored without room.
  void allocate(const TraceEvent& event);
  /// A TraceKind::free event of the target, in order with its copies: a
  /// region whose object's asynchronous copy out of it has not landed is held
  /// until it does. Ignored without room.
  void free(const TraceEvent& event);

  /// @name The planners' side
  /// Copies of known bytes between devices, kernels of known seconds, and
  /// the compute timeline's waits, on the same channels, lanes and per-object
  /// copy ends as the trace events above.
  ///@{

  /// An asynchronous copy of `bytes` of `object` on the mover, issued at the
  /// current compute time and starting no earlier than `earliest`; its span.
  CopySpan copy_async(DeviceId src, DeviceId dst, std::uint64_t bytes, std::uint64_t object, double earliest = 0);
  /// A background copy of `bytes` of `object` (a write-back made ahead,
  /// CopyPriority::background): queued at the current compute time, it
  /// starts, as on the mover, behind every copy issued before a thread
  /// takes it, or when something needs its end (landed(), a kernel or a
  /// synchronous copy on `object`).
  void copy_background(DeviceId src, DeviceId dst, std::uint64_t bytes, std::uint64_t object);
  /// A synchronous copy of `bytes` of `object` by the compute thread: after
  /// the object's copies in flight, on its channel, no lane; the compute
  /// timeline waits for it. Its span.
  CopySpan copy_sync(DeviceId src, DeviceId dst, std::uint64_t bytes, std::uint64_t object);
  /// A kernel of `seconds` on `objects`: it waits for their copies in
  /// flight, then runs. When it starts.
  double run_kernel(std::span<const std::uint64_t> objects, double seconds);
  /// The compute timeline waits until `at` (the time counts as exposed copy
  /// time: a planner's own rule of what a kernel waits for); the new now().
  double wait_until(double at);
  /// The compute timeline runs `seconds` of work that waits for nothing.
  void run(double seconds) noexcept { compute_ += seconds; }
  /// When the copies issued so far of `object` land (0: none).
  [[nodiscard]] double landed(std::uint64_t object);
  /// When a copy on the mover issued now would start, no earlier than
  /// `earliest`: once its channel and a lane are free.
  [[nodiscard]] double mover_start(DeviceId src, DeviceId dst, double earliest = 0) const;
  /// The seconds a copy of `bytes` takes on channel src -> dst alone.
  [[nodiscard]] double copy_seconds(DeviceId src, DeviceId dst, std::uint64_t bytes) const {
    return channels_.seconds(src, dst, bytes);
  }
  /// The next iteration, starting at 0, as this one leaves it: every time
  /// (the compute timeline, the channels and lanes, the objects' copy ends)
  /// `by` seconds earlier, the channels and lanes not before 0; a background
  /// copy queued that a thread would take before `by` is started first.
  void carry_over(double by);
  /// When the channels are next all idle.
  [[nodiscard]] double channels_idle() const { return channels_.idle_at(); }
  ///@}

  /// Where the compute timeline is, in modeled seconds: the end of the last
  /// kernel or synchronous copy.
  [[nodiscard]] double now() const noexcept { return compute_; }
  /// When the last kernel and the last copy are done (the background copies
  /// still queued included), in modeled seconds.
  [[nodiscard]] double seconds() const;
  /// Compute time spent in synchronous copies or waiting for asynchronous ones.
  [[nodiscard]] double exposed_copy_seconds() const noexcept { return exposed_; }
  /// Every copy's own time, hidden or not.
  [[nodiscard]] double copy_seconds() const noexcept { return copying_; }

 private:
  // A background copy issued and not started yet; `seq` from 1, in issue order.
  struct Queued {
    std::uint64_t seq = 0;
    DeviceId src = 0, dst = 0;
    std::uint64_t bytes = 0;
    std::uint64_t object = 0;
    double issued = 0;  // the compute time it was issued at
    double room = 0;    // when its target has room for it (0: at once)
  };

  // A copy on the mover thread that frees first, after what its channel
  // already carries, no earlier than `earliest`; returns its span.
  CopySpan run_on_mover(DeviceId src, DeviceId dst, std::uint64_t bytes, std::uint64_t object, double earliest);
  // Starts, in order, the queued background copies a mover thread would
  // take before `before` (when a copy issued then would go first).
  void start_background(double before);
  // Starts the queued background copies up to the one numbered `seq`.
  void start_background_through(std::uint64_t seq);
  // When the copies in flight into or out of `object` are done (a queued
  // background one started first).
  double ready(std::uint64_t object);
  // When device `device`'s landing sources leave room for what it holds.
  double room_at(DeviceId device);
  // A pending wait for room that no asynchronous copy took: the compute
  // timeline waits it out.
  void settle_wait();

  // A freed source region still being read by its copy (`seq`: a queued
  // background copy, whose end is not known until it starts; else 0).
  struct Landing {
    double at = 0;
    std::uint64_t bytes = 0;
    std::uint64_t seq = 0;
  };
  // The source and end of an object's last asynchronous copy (`seq` as in
  // Landing).
  struct Leaving {
    DeviceId device = 0;
    double end = 0;
    std::uint64_t seq = 0;
  };
  // An allocation that must wait for landing sources, until the next event
  // says who waits: an asynchronous copy into its device right after it
  // (its copy in: an allocation event names no object yet), or else the
  // compute timeline.
  struct RoomWait {
    bool pending = false;
    DeviceId device = 0;
    double until = 0;
  };

  // Where an object's last copy's end is kept: the dense vector below
  // `objects`, else the map.
  double& ready_slot(std::uint64_t object);

  CopyChannels channels_;
  CopyChannels idle_;                    // the channels as made: reset() returns to them
  std::vector<DeviceUsage> room_given_;  // the room as given: reset() returns to it
  std::vector<double> dense_ready_;      // by planner object: its last copy's end
  double compute_ = 0;
  double exposed_ = 0;
  double copying_ = 0;
  std::unordered_map<std::uint64_t, double> ready_at_;  // object -> its last copy's end
  std::vector<DeviceUsage> room_;                       // empty: no hold
  std::vector<std::vector<Landing>> landing_;           // by device
  std::unordered_map<std::uint64_t, Leaving> leaving_;  // by object
  RoomWait wait_;
  std::deque<Queued> queued_;                                    // background copies, in issue order
  std::unordered_map<std::uint64_t, std::uint64_t> queued_for_;  // object -> its last queued copy's seq
  std::uint64_t issued_background_ = 0;
};

}  // namespace cachedarrays::plan

#ifdef CACHEDARRAYS_HEADER_ONLY
#include "cachedarrays/plan/schedule/copy_timeline-inl.hpp"
#endif
