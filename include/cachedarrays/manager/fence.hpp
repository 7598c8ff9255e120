// The completion of one asynchronous copy (docs/design.md invariant 7). The
// data manager issues the copy to its Mover and hands back a Fence; the
// mover's thread makes the copy and signals the fence. Whoever needs the
// copy's bytes waits on it: the manager itself before any operation that
// reads, frees, moves or overwrites a region in flight, and a policy that
// wants to know (or wait) explicitly.
//
// A failed copy (an exception on the mover's thread) is kept in the fence
// and thrown by wait(): the source is intact and the destination is never
// counted as a valid copy, so nothing the user stored is lost.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>

#include "cachedarrays/manager/detail/copy_engine.hpp"

namespace cachedarrays {

class Region;

/// How soon an asynchronous copy is wanted. A `normal` copy (a prefetch a
/// kernel will wait for) runs in the order it was issued; a `background` copy
/// (a write-back made so that the data is clean when room is needed later)
/// runs after every normal copy issued before it starts.
enum class CopyPriority { normal, background };

namespace detail {

// What the mover needs to make one copy, and what it reports back. The
// fields above `done` are written by the issuing thread before the copy is
// queued; the ones below by the mover before it sets `done`.
struct CopyState {
  std::byte* dst = nullptr;
  const std::byte* src = nullptr;
  std::uint64_t bytes = 0;
  CopyDestination where = CopyDestination::fast;
  // Least wall time the copy may take (an emulated device's bandwidth), and
  // the extra time of a memory-mode device's cache misses after it.
  double least_ns = 0;
  double after_ns = 0;
  bool background = false;  // CopyPriority::background
  // The manager's bookkeeping (read and written only under its lock).
  Region* dst_region = nullptr;
  const Region* src_region = nullptr;
  bool settled = false;    // the manager has applied the outcome
  bool cancelled = false;  // dropped before it started (never made)

  // Set by the mover thread.
  std::uint64_t busy_ns = 0;           // from the start of the copy to its end
  std::uint64_t emulated_wait_ns = 0;  // of which held back by emulation
  std::exception_ptr error;
  std::atomic<bool> done{false};
  std::mutex mutex;
  std::condition_variable finished;

  void complete(std::exception_ptr failure) {
    {
      std::lock_guard guard(mutex);
      error = std::move(failure);
      done.store(true, std::memory_order_release);
    }
    finished.notify_all();
  }
  // Blocks until the mover is done with the copy; returns the nanoseconds
  // waited (0 when it was already done).
  std::uint64_t wait() {
    if (done.load(std::memory_order_acquire)) return 0;
    const auto t0 = std::chrono::steady_clock::now();
    std::unique_lock lock(mutex);
    finished.wait(lock, [&] { return done.load(std::memory_order_acquire); });
    return static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count());
  }
};

}  // namespace detail

/// The completion of one asynchronous copy (DataManager::copyto_async): the
/// mover signals it when the copy is made; wait() blocks until then and
/// rethrows the copy's failure. Cheap to copy: every copy of a fence waits for the same copy.
class Fence {
 public:
  /// A fence of nothing: already complete.
  Fence() = default;
  /// The fence of the copy `state` describes (made by the DataManager).
  explicit Fence(std::shared_ptr<detail::CopyState> state) noexcept : state_(std::move(state)) {}

  /// True once the copy has finished (successfully or not).
  [[nodiscard]] bool ready() const noexcept {
    return state_ == nullptr || state_->done.load(std::memory_order_acquire);
  }
  /// Blocks until the copy has finished; rethrows its failure (a copy_error
  /// for a media error). Safe from any thread and any number of times.
  void wait() const {
    if (state_ == nullptr) return;
    state_->wait();
    if (state_->error) std::rethrow_exception(state_->error);
  }

 private:
  std::shared_ptr<detail::CopyState> state_;
};

}  // namespace cachedarrays
