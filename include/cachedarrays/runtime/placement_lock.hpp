// The runtime's lock, and the sequence number that lets reads skip it
// (runtime/unlocked_access-inl.hpp). One word is both: even while the lock
// is free, odd while it is held. Taking it is one compare-and-swap from an
// even value to the next odd one, which is also the store that the protocol
// of the unlocked reads needs before the holder looks at any pin. A
// std::mutex beside a separate sequence would cost one more atomic
// read-modify-write on every call that takes the lock, the kernel's path
// included. Waiters sleep on the word itself (a Linux futex), so a holder
// that moves data for long does not keep them spinning.
//
// The word is 32 bits, as a futex is: it wraps after 2^31 locks, which
// keeps its parity, and a reader only compares two values it loaded
// nanoseconds apart.
#pragma once

#include "cachedarrays/config.hpp"

#include <atomic>
#include <cstdint>

namespace cachedarrays {

/// A lock whose state is a sequence number: even while free, odd while held
/// (BasicLockable: std::lock_guard takes it). sequence() lets a thread that
/// does not take the lock see whether a holder ran since it last looked.
class PlacementLock {
 public:
  /// Takes the lock; spins briefly, then sleeps until the holder lets go.
  void lock() noexcept {
    std::uint32_t seen = sequence_.load(std::memory_order_relaxed);
    for (int spins = 0;; ++spins) {
      if ((seen & 1) == 0 &&
          sequence_.compare_exchange_weak(seen, seen + 1, std::memory_order_seq_cst, std::memory_order_relaxed)) {
        return;
      }
      if ((seen & 1) != 0) {
        // A short wait is usually all it takes (the lock is held for one
        // hint or one kernel's pins); past that, sleep rather than burn a
        // core the holder may need.
        if (spins < spin_limit) {
          __builtin_ia32_pause();
        } else {
          sleep_while(seen);
        }
        seen = sequence_.load(std::memory_order_relaxed);
      }
    }
  }
  /// Lets the lock go (the caller holds it).
  void unlock() noexcept {
    // A full barrier (a locked add): the load of sleepers_ below must not
    // pass the store, or a thread going to sleep just now could be missed.
    sequence_.fetch_add(1, std::memory_order_seq_cst);
    if (sleepers_.load(std::memory_order_seq_cst) != 0) wake_one();
  }
  /// The sequence now: odd while the lock is held, and one more at every
  /// lock and every unlock. `order` is the load's memory order.
  [[nodiscard]] std::uint32_t sequence(std::memory_order order = std::memory_order_acquire) const noexcept {
    return sequence_.load(order);
  }

 private:
  // Sleeps while the sequence is still `held`; the kernel compares the word
  // and sleeps as one step, so an unlock in between is never missed (the
  // futex returns at once), and sleepers_ tells unlock that a wake is owed.
  // Out of line, with the wake, in placement_lock-inl.hpp: both are the slow
  // path, and the futex's OS headers stay out of the public headers.
  void sleep_while(std::uint32_t held) noexcept;
  // Wakes one thread sleeping in sleep_while.
  void wake_one() noexcept;

  static constexpr int spin_limit = 128;
  std::atomic<std::uint32_t> sequence_{0};
  std::atomic<std::uint32_t> sleepers_{0};
};

static_assert(sizeof(std::atomic<std::uint32_t>) == sizeof(std::uint32_t) &&
                  std::atomic<std::uint32_t>::is_always_lock_free,
              "the futex sleeps on the atomic's own bytes");

}  // namespace cachedarrays

#ifdef CACHEDARRAYS_HEADER_ONLY
#include "cachedarrays/runtime/placement_lock-inl.hpp"
#endif
