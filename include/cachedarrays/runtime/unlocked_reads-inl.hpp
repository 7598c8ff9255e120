// Reads that skip the runtime's lock (runtime.hpp; docs/design.md "Reads
// that skip the lock"), and the Lock that every call that may move data
// takes instead of the bare mutex.
//
// A read of an object may pin it and resolve its primary without the lock
// when the policy has said its will_read needs no lock (deferred or
// unneeded) for the object where it is. The protocol is Dekker's: the
// reader adds its pins, then checks that the lock's sequence
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
#include <exception>

namespace cachedarrays {

CACHEDARRAYS_INLINE Runtime::Lock::Lock(Runtime& runtime) : runtime_(runtime) {
  // The sequence is odd from here: a read that pins from now on backs off.
  runtime_.placement_.lock();
  try {
    runtime_.deliver_deferred_reads();
  } catch (...) {
    runtime_.placement_.unlock();
    throw;
  }
}

CACHEDARRAYS_INLINE Runtime::Lock::~Lock() { runtime_.placement_.unlock(); }

CACHEDARRAYS_INLINE void Runtime::refresh_read_delivery(Object& object) {
  if (!unlocked_reads_.load(std::memory_order_relaxed) || object.read_hint_delivery() != HintDelivery::under_lock) return;
  object.read_delivery_.store(static_cast<std::uint8_t>(policy_->read_hint_delivery(object)),
                              std::memory_order_relaxed);
}

CACHEDARRAYS_INLINE bool Runtime::try_acquire_unlocked(Object* const* objects, const Access* accesses,
                                                       std::byte** data, std::size_t n, double& emulated_ns) {
  // A trace records every kernel with its arguments' devices, under the lock.
  if (!unlocked_reads_.load(std::memory_order_relaxed)) return false;
  for (std::size_t i = 0; i < n; ++i) {
    if (accesses[i] != Access::read) return false;  // a write pin changes the primary's state
  }
  if (recording_on_.load(std::memory_order_acquire)) return false;
  const std::uint32_t seq = placement_.sequence();
  if ((seq & 1) != 0) return false;
  for (std::size_t i = 0; i < n; ++i) {
    if (objects[i]->read_hint_delivery() == HintDelivery::under_lock || !manager_.readable_unlocked(*objects[i])) {
      return false;
    }
  }
  for (std::size_t i = 0; i < n; ++i) objects[i]->pins_.fetch_add(1, std::memory_order_seq_cst);
  if (placement_.sequence(std::memory_order_seq_cst) != seq) {
    for (std::size_t i = 0; i < n; ++i) DataManager::unpin(*objects[i], Access::read);
    return false;
  }
  // Pinned, and nothing moved since `seq`: from here on no lock holder moves
  // these objects.
  for (std::size_t i = 0; i < n; ++i) {
    Object& object = *objects[i];
    emulated_ns += manager_.note_read_unlocked(object);
    object.hinted(Hint::will_read);
    if (object.read_hint_delivery() == HintDelivery::deferred) defer_read_hint(object);
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
  if (delivery == HintDelivery::deferred) defer_read_hint(object);
  return true;
}

CACHEDARRAYS_INLINE void Runtime::defer_read_hint(Object& object) {
  // One entry per object until it is delivered; the common case (already
  // queued) only reads its own object's flag.
  if (object.read_deferred_.load(std::memory_order_relaxed) ||
      object.read_deferred_.exchange(true, std::memory_order_acq_rel)) {
    return;
  }
  Object* head = deferred_reads_.load(std::memory_order_relaxed);
  do {
    object.next_deferred_ = head;
  } while (!deferred_reads_.compare_exchange_weak(head, &object, std::memory_order_release,
                                                  std::memory_order_relaxed));
}

CACHEDARRAYS_INLINE void Runtime::deliver_deferred_reads() {
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
    // From here a new read may queue the object again (it never touches
    // next_deferred_ before this store).
    object.read_deferred_.store(false, std::memory_order_release);
    try {
      dispatch_hint(object, Hint::will_read, HintSource::kernel_argument);
    } catch (...) {
      if (!failure) failure = std::current_exception();
    }
  }
  if (failure) std::rethrow_exception(failure);
}

}  // namespace cachedarrays
