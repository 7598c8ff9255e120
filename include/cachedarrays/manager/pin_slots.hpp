// The pins of accesses that skip the runtime's lock, kept per thread.
// A pin in the object's own word (Object::pins_) is an atomic add, and its
// unpin a subtract: two locked instructions per argument, which make a
// kernel's pins its largest cost, and when two threads use one array the
// word's cache line bounces between their cores. An unlocked access instead
// stores the object's address in one of its thread's own slots (a cache
// line only that thread fills), with a plain store; after the last argument
// one fence orders every slot before the check of the lock's sequence; the
// unpin stores zero. A kernel of any number of arguments then pays one
// locked instruction, and threads using one array write nothing in common.
//
// A lock holder still sees every pin before it moves an object:
// Object::pinned() and being_written() add the slots that hold the object
// to its pin word. The protocol is the unlocked accesses'
// (runtime/unlocked_access-inl.hpp): the accessor stores its slots, fences,
// then loads the lock's sequence; the holder makes the sequence odd, then
// loads the slots; so one of them sees the other.
//
// Each pin knows its slot (a PinToken, kept by the access that took it), so
// its unpin empties exactly that slot, from whichever thread the access
// ends on (a scoped access may be moved to another thread). Only the slot's
// owner fills an empty slot, so an unpin never races with another pin of
// the same slot.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>

#include "cachedarrays/manager/thread_stripes.hpp"

namespace cachedarrays::detail {

// ThreadSanitizer does not model fences (GCC refuses one under it): there
// each slot's store is seq_cst itself, which orders it before the
// sequence's load without a fence, at one locked instruction per pin.
#if defined(__SANITIZE_THREAD__)
#define CACHEDARRAYS_PIN_SLOTS_STORE_EACH 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define CACHEDARRAYS_PIN_SLOTS_STORE_EACH 1
#endif
#endif

/// Orders every pin stored in a slot before the caller's next load (the
/// second load of the lock's sequence): one seq_cst fence.
inline void fence_after_pins() noexcept {
#ifndef CACHEDARRAYS_PIN_SLOTS_STORE_EACH
  std::atomic_thread_fence(std::memory_order_seq_cst);
#endif
}

/// Where an unlocked access's pin is held: pin_word (0) for the object's
/// pin word, k + 1 for slot k of PinSlots.
using PinToken = std::uint16_t;
inline constexpr PinToken pin_word = 0;
/// A thread number no thread has: a pin "in its slots" goes to the pin word.
inline constexpr std::size_t no_thread_number = thread_stripe_count;

/// Slots per thread: a thread holding more unlocked pins at once pins the
/// rest in the objects' pin words.
inline constexpr std::size_t pin_slots_per_thread = 8;

/// Every thread's pin slots, one group of pin_slots_per_thread per thread
/// number (thread_stripes.hpp). A thread without a number of its own (more
/// live threads than numbers) pins in the pin words.
class PinSlots {
 public:
  /// Stores a pin of `object` (for writing when `write`) in a free slot of
  /// the calling thread, whose number is `thread` (this_thread_number()),
  /// with a relaxed store, and returns its token; the caller then calls
  /// fence_after_pins() before it checks the lock's sequence. pin_word, with nothing
  /// stored, when the thread has no number of its own or no free slot.
  PinToken pin(const void* object, bool write, std::size_t thread) noexcept {
    if (thread >= thread_stripe_count) return pin_word;
    Group& group = groups_[thread];
    for (std::size_t i = 0; i < pin_slots_per_thread; ++i) {
      std::atomic<std::uintptr_t>& entry = group.entries[i];
      // Only this thread fills its slots; any thread may empty them.
      if (entry.load(std::memory_order_relaxed) != 0) continue;
      if (groups_used_.load(std::memory_order_relaxed) <= thread) note_used(thread);
      entry.store(reinterpret_cast<std::uintptr_t>(object) | (write ? write_bit : 0), pin_order);
      return static_cast<PinToken>(thread * pin_slots_per_thread + i + 1);
    }
    return pin_word;
  }

  /// Ends the pin `token` (not pin_word) holds; from any thread. Release:
  /// what the access did happens before a lock holder that sees the slot
  /// empty moves the object.
  void unpin(PinToken token) noexcept {
    const std::size_t slot = token - 1U;
    groups_[slot / pin_slots_per_thread].entries[slot % pin_slots_per_thread].store(0, std::memory_order_release);
  }

  /// Whether any thread's slots pin `object`.
  [[nodiscard]] bool holds(const void* object) const noexcept {
    return find(reinterpret_cast<std::uintptr_t>(object), ~write_bit);
  }
  /// Whether any thread's slots pin `object` for writing.
  [[nodiscard]] bool holds_write(const void* object) const noexcept {
    return find(reinterpret_cast<std::uintptr_t>(object) | write_bit, ~std::uintptr_t{0});
  }

 private:
  // Objects are aligned, so an address's lowest bit is free for the kind.
  static constexpr std::uintptr_t write_bit = 1;
#ifdef CACHEDARRAYS_PIN_SLOTS_STORE_EACH
  static constexpr std::memory_order pin_order = std::memory_order_seq_cst;
#else
  static constexpr std::memory_order pin_order = std::memory_order_relaxed;
#endif

  // Each group on lines of its own, in 128-byte pairs (thread_stripes.hpp).
  struct alignas(128) Group {
    std::array<std::atomic<std::uintptr_t>, pin_slots_per_thread> entries{};
  };

  void note_used(std::size_t thread) noexcept {
    std::size_t used = groups_used_.load(std::memory_order_relaxed);
    while (used <= thread && !groups_used_.compare_exchange_weak(used, thread + 1, std::memory_order_seq_cst)) {
    }
  }

  [[nodiscard]] bool find(std::uintptr_t wanted, std::uintptr_t mask) const noexcept {
    const std::size_t used = groups_used_.load(std::memory_order_seq_cst);
    for (std::size_t g = 0; g < used; ++g) {
      for (const std::atomic<std::uintptr_t>& entry : groups_[g].entries) {
        if ((entry.load(std::memory_order_seq_cst) & mask) == wanted) return true;
      }
    }
    return false;
  }

  std::array<Group, thread_stripe_count> groups_{};
  // Groups that have ever held a pin: holds() looks at no others.
  alignas(128) std::atomic<std::size_t> groups_used_{0};
};

/// The process's slots: objects of every manager share them (an entry is
/// an object's address, unique while the object lives and is pinned).
inline PinSlots& pin_slots() noexcept {
  static PinSlots slots;
  return slots;
}

}  // namespace cachedarrays::detail
