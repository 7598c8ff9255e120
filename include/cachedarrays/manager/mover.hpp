// The asynchronous mover (docs/design.md "What is known ahead"): threads beside
// the compute threads that make the copies DataManager::copyto_async
// queues, so that a prefetch or a write-back overlaps the kernels instead of
// sitting on the critical path. Copies run in the order they were queued
// (one thread: strictly; several: started in that order), except that a
// background copy (CopyPriority::background) waits behind every other copy
// queued before it starts: a write-back made only to have clean data later
// must not delay a prefetch a kernel will wait for.
//
// When a copy touches an emulated device, the mover thread also waits out
// the time that device's bandwidth adds: the compute threads only wait when
// they need the copy's bytes (at its fence).
#pragma once

#include "cachedarrays/config.hpp"

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <stop_token>
#include <thread>
#include <vector>

#include "cachedarrays/manager/fence.hpp"

namespace cachedarrays {

/// How the mover's threads compete with the compute threads for the cores.
enum class MoverPriority : std::uint8_t {
  /// Scheduled like any thread: a copy takes a core as soon as it is queued.
  normal,
  /// SCHED_IDLE (Linux): a mover thread runs only on a core nothing else
  /// wants, so its copies fill the gaps between and inside kernels (serial
  /// sections, barrier waits) instead of preempting a compute thread. On a
  /// machine whose compute threads hold every core, a thread preempted in a
  /// parallel kernel stalls all of them at the next barrier, so a normal
  /// mover costs more than its own time there. A copy a kernel needs before
  /// the mover got to it is taken over by the thread that needs it
  /// (DataManager's take-over), so an idle mover never starves a kernel.
  idle,
};

/// How a Mover makes its copies: its threads, their priority, and a test hook.
struct MoverOptions {
  /// Threads making asynchronous copies; they start with the first copy.
  /// Two by default: a copy in then never waits behind a write-back a thread
  /// has started (the two run side by side, on the tiers' separate read and
  /// write paths). With one, ReDL's iterations came out slower, both in the
  /// replay and measured on an emulated slow tier.
  unsigned threads = 2;
  MoverPriority priority = MoverPriority::normal;  ///< How the threads are scheduled.
  /// Called on a mover thread before each copy with its size; whatever it
  /// throws fails that copy (the failure surfaces at the copy's fence). Tests
  /// inject failing copies with it; leave it empty otherwise.
  std::function<void(std::uint64_t bytes)> before_copy;
};

/// The asynchronous mover: threads beside the compute threads that make the
/// copies DataManager::copyto_async queues, in queue order, background copies
/// behind the others (see the file comment). Owned by the DataManager.
class Mover {
 public:
  /// A mover whose threads start with the first copy. Throws
  /// invalid_argument for 0 threads.
  explicit Mover(MoverOptions options = {});
  /// Finishes every queued copy, then stops the threads.
  ~Mover();
  Mover(const Mover&) = delete;
  Mover& operator=(const Mover&) = delete;

  /// Queues the copy `state` describes; its fence completes when it is made.
  /// False, queueing nothing, when no mover thread runs and none could be
  /// started: the caller then makes the copy itself (make()).
  [[nodiscard]] bool submit(std::shared_ptr<detail::CopyState> state);
  /// Removes `state` from the queue if no thread has started it yet; true
  /// when it did, and the caller then owns the copy (make() it or drop it).
  [[nodiscard]] bool withdraw(const detail::CopyState& state);
  /// While a hold is open, submit() queues without waking a thread; the
  /// last release wakes one thread per copy queued meanwhile. A caller
  /// issuing copies under a lock it soon lets go of holds the wakes, so that
  /// a woken mover thread does not take the core of the thread that holds
  /// the lock. A copy that is waited for meanwhile must be withdrawn and
  /// made by the waiting thread (DataManager::settle does): no thread would
  /// wake to make it.
  void hold_wakes();
  /// Ends a hold_wakes(); the last one open wakes a thread per copy queued
  /// meanwhile (every thread when there were more copies than one).
  void release_wakes() noexcept;
  /// Makes the copy on the calling thread as a mover thread would (the
  /// before_copy hook and the emulated time included); throws what the copy
  /// throws. Does not complete the state.
  static void make(detail::CopyState& state, const MoverOptions& options);
  /// make() on the calling thread, then completes the state with its outcome
  /// (a failure is kept for the fence, not thrown).
  static void make_and_complete(detail::CopyState& state, const MoverOptions& options) noexcept;
  /// The options the mover was made with.
  [[nodiscard]] const MoverOptions& options() const noexcept { return options_; }

 private:
  void run(std::stop_token stop);

  MoverOptions options_;
  std::mutex mutex_;
  std::condition_variable_any queued_;
  std::deque<std::shared_ptr<detail::CopyState>> queue_;  // the others, then the background ones
  std::size_t foreground_ = 0;                            // copies at the front of queue_ that are not background
  unsigned wake_holds_ = 0;                               // hold_wakes() not yet released
  std::size_t held_wakes_ = 0;                            // copies queued while held
  std::vector<std::jthread> threads_;                     // last: they stop before the queue goes
};

}  // namespace cachedarrays

#ifdef CACHEDARRAYS_HEADER_ONLY
#include "cachedarrays/manager/mover-inl.hpp"
#endif
