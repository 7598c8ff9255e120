// Reads and writes that skip the runtime's lock (runtime.hpp; docs/design.md
// "Reads that skip the lock" and "Writes that skip the lock"), and the Lock
// that every call that may move data takes instead of the bare mutex.
//
// A read of an object may pin it and resolve its primary without the lock
// when the policy has said its will_read needs no lock (deferred or
// unneeded) for the object where it is; a write likewise, by its
// will_write's answer, and only where the write leaves the object's state
// as it is (DataManager::writable_unlocked). The protocol is Dekker's: the
// reader stores its pins (pin_slots.hpp), then checks that the lock's sequence
// (placement_lock.hpp) is even and unchanged since before; taking the lock
// makes the sequence odd, and the holder checks pins before it moves
// anything. Both sides store before they load, with
// seq_cst, so at least one sees the other: either the reader backs off to
// the lock, or the holder sees the pin and leaves the object where it is
// (every move of a primary refuses a pinned object). What the reader read
// between its two loads of an even, unchanged sequence was written by lock
// holders that had finished, so it is consistent.
#pragma once

#include "cachedarrays/config.hpp"
#include "cachedarrays/runtime/runtime.hpp"

#include <atomic>
#include <chrono>
#include <exception>
#include <utility>

namespace cachedarrays {

CACHEDARRAYS_INLINE Runtime::Lock::Lock(Runtime& runtime) : runtime_(runtime) {
  // The sequence is odd from here: a read that pins from now on backs off.
  runtime_.placement_.lock();
  timed_ = ++runtime_.lock_counters_.acquisitions % lock_timing_period == 0;
  if (timed_) timed_from_ = std::chrono::steady_clock::now();
  try {
    runtime_.deliver_deferred_hints();
  } catch (...) {
    runtime_.placement_.unlock();
    throw;
  }
}

CACHEDARRAYS_INLINE Runtime::Lock::~Lock() {
  if (timed_) {
    LockCounters& counters = runtime_.lock_counters_;
    ++counters.timed;
    counters.timed_ns += static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - timed_from_).count());
  }
  runtime_.placement_.unlock();
}

CACHEDARRAYS_INLINE void Runtime::refresh_hint_delivery(Object& object) {
  if (!unlocked_reads_.load(std::memory_order_relaxed)) return;
  if (object.read_hint_delivery() == HintDelivery::under_lock) {
    object.read_delivery_.store(static_cast<std::uint8_t>(policy_->read_hint_delivery(object)),
                                std::memory_order_relaxed);
  }
  if (object.write_hint_delivery() == HintDelivery::under_lock) {
    object.write_delivery_.store(static_cast<std::uint8_t>(policy_->write_hint_delivery(object)),
                                 std::memory_order_relaxed);
  }
}

CACHEDARRAYS_INLINE bool Runtime::try_acquire_unlocked(Object* const* objects, const Access* accesses, std::byte** data,
                                                       detail::PinToken* tokens, std::size_t n, double& emulated_ns) {
  // A trace records every kernel with its arguments' devices, under the lock.
  if (!unlocked_reads_.load(std::memory_order_relaxed)) return false;
  if (recording_on_.load(std::memory_order_acquire)) return false;
  const std::uint32_t seq = placement_.sequence();
  if ((seq & 1) != 0) return false;
  for (std::size_t i = 0; i < n; ++i) {
    const Object& object = *objects[i];
    // A write also needs the object's state to be one the write leaves as
    // it is: no new version, no secondary made stale, no copy torn.
    const bool allowed =
        accesses[i] == Access::read
            ? object.read_hint_delivery() != HintDelivery::under_lock && manager_.readable_unlocked(object)
            : object.write_hint_delivery() != HintDelivery::under_lock && manager_.writable_unlocked(object);
    if (!allowed) return false;
  }
  const std::size_t thread = detail::this_thread_number();
  for (std::size_t i = 0; i < n; ++i) tokens[i] = DataManager::pin_unlocked(*objects[i], accesses[i], thread);
  // One fence for every pin in a slot (pin_slots.hpp): they come before the
  // sequence's second load.
  detail::fence_after_pins();
  if (placement_.sequence(std::memory_order_seq_cst) != seq) {
    for (std::size_t i = 0; i < n; ++i) DataManager::unpin(*objects[i], accesses[i], tokens[i]);
    return false;
  }
  // Pinned, and nothing moved since `seq`: from here on no lock holder moves
  // these objects, and none copies one pinned for writing.
  emulated_ns += manager_.note_accesses_unlocked(objects, accesses, n);
  for (std::size_t i = 0; i < n; ++i) {
    Object& object = *objects[i];
    const bool write = accesses[i] == Access::write;
    object.hinted(write ? Hint::will_write : Hint::will_read);
    if ((write ? object.write_hint_delivery() : object.read_hint_delivery()) == HintDelivery::deferred) {
      defer_hint(object, write ? Object::deferred_write : Object::deferred_read);
    }
    data[i] = manager_.pointer(*manager_.getprimary(object));
  }
  unlocked_kernels_.add(0, 1);
  return true;
}

CACHEDARRAYS_INLINE bool Runtime::try_hint_unlocked(Object& object) {
  // A trace records the program's hints, under the lock.
  if (!unlocked_reads_.load(std::memory_order_relaxed) || recording_on_.load(std::memory_order_acquire)) return false;
  const std::uint32_t seq = placement_.sequence();
  if ((seq & 1) != 0) return false;
  const HintDelivery delivery = object.read_hint_delivery();
  if (delivery == HintDelivery::under_lock) return false;
  // Nothing is pinned: the answer only counts if no lock holder ran while it
  // was read.
  if (placement_.sequence(std::memory_order_seq_cst) != seq) return false;
  object.hinted(Hint::will_read);
  if (delivery == HintDelivery::deferred) defer_hint(object, Object::deferred_read);
  return true;
}

CACHEDARRAYS_INLINE void Runtime::defer_hint(Object& object, std::uint8_t hint) {
  // One entry per object until it is delivered; the common case (already
  // queued for this hint) only reads its own object's flags. The thread that
  // sets the first flag queues the object.
  if ((object.deferred_hints_.load(std::memory_order_relaxed) & hint) != 0) return;
  if (object.deferred_hints_.fetch_or(hint, std::memory_order_acq_rel) != 0) return;
  Object* head = deferred_reads_.load(std::memory_order_relaxed);
  do {
    object.next_deferred_ = head;
  } while (!deferred_reads_.compare_exchange_weak(head, &object, std::memory_order_release, std::memory_order_relaxed));
}

CACHEDARRAYS_INLINE void Runtime::deliver_deferred_hints() {
  if (deferred_reads_.load(std::memory_order_relaxed) == nullptr) return;
  Object* newest = deferred_reads_.exchange(nullptr, std::memory_order_acquire);
  // The list is newest first; the policy hears them oldest first, as they
  // came (a recency order then ends with the latest read).
  Object* oldest = nullptr;
  while (newest != nullptr) {
    Object* next = newest->next_deferred_;
    newest->next_deferred_ = oldest;
    oldest = newest;
    newest = next;
  }
  // Every hint is delivered even if the policy throws on one: the first
  // exception is rethrown after the last.
  std::exception_ptr failure;
  while (oldest != nullptr) {
    Object& object = *oldest;
    oldest = object.next_deferred_;
    // From here a new access may queue the object again (it never touches
    // next_deferred_ before this exchange).
    const std::uint8_t hints = object.deferred_hints_.exchange(0, std::memory_order_acq_rel);
    for (const auto& [flag, hint] :
         {std::pair{Object::deferred_read, Hint::will_read}, std::pair{Object::deferred_write, Hint::will_write}}) {
      if ((hints & flag) == 0) continue;
      // A write moved since lands where it was written: a will_write now
      // would bring back an object the policy has since sent away.
      if (hint == Hint::will_write && object.write_hint_delivery() != HintDelivery::deferred) continue;
      try {
        dispatch_hint(object, hint, HintSource::kernel_argument);
      } catch (...) {
        if (!failure) failure = std::current_exception();
      }
    }
  }
  if (failure) std::rethrow_exception(failure);
}

}  // namespace cachedarrays
