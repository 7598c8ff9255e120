// Read pins of objects that several threads read at once, kept per thread.
// An object's pins are one atomic word (Object::pins_): when two threads read
// one array, each pin and unpin is a read-modify-write of that word, whose
// cache line then bounces between their cores, and two readers do less than
// one. Once a reader sees another's pin on an object, the object is marked
// shared (Object::shared_reads_) and from then on its unlocked read pins go to
// the pinning thread's own slots, a cache line that only that thread writes.
// Readers of a shared object then write nothing in common.
//
// A lock holder still sees every pin before it moves an object: pinned() adds
// the slots of a shared object to its pin word. The protocol is the unlocked
// reads' (runtime/unlocked_access-inl.hpp): a reader stores the mark, the
// number of thread groups in use and its slot, then loads the lock's
// sequence; the holder makes the sequence odd, then loads the mark and the
// slots; all seq_cst, so one sees the other.
//
// Any thread may end a pin (a scoped access may be moved to another thread
// and end there), and read pins are interchangeable: ending one removes one
// pin of the object, from the ending thread's slots if it holds one, else
// from the pin word, else from another thread's slot. Entries are emptied
// with a compare-and-swap, so two threads ending pins never empty one slot
// twice.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>

#include "cachedarrays/manager/thread_stripes.hpp"

namespace cachedarrays::detail {

/// Slots per thread: a thread holding more read pins of shared objects at
/// once pins the rest in their pin words.
inline constexpr std::size_t reader_slots_per_thread = 8;

/// Every thread's read-pin slots, one cache line each, indexed by the
/// thread's number (thread_stripes.hpp). A thread without a number of its
/// own (more live threads than numbers) pins in the pin word.
class ReaderSlots {
 public:
  /// Pins `object` in the calling thread's slots; false (nothing stored)
  /// when the thread has no number of its own or no free slot.
  bool pin(const void* object) noexcept {
    const std::size_t thread = this_thread_number();
    if (thread >= thread_stripe_count) return false;
    Group& group = groups_[thread];
    for (std::atomic<const void*>& entry : group.entries) {
      // Only this thread fills its entries; others only empty them.
      if (entry.load(std::memory_order_relaxed) != nullptr) continue;
      std::size_t used = groups_used_.load(std::memory_order_relaxed);
      while (used <= thread && !groups_used_.compare_exchange_weak(used, thread + 1, std::memory_order_seq_cst)) {
      }
      entry.store(object, std::memory_order_seq_cst);
      return true;
    }
    return false;
  }

  /// Ends one pin of `object` held in the calling thread's slots; false
  /// when it holds none.
  bool unpin_own(const void* object) noexcept {
    const std::size_t thread = this_thread_number();
    if (thread >= thread_stripe_count) return false;
    return unpin_in(groups_[thread], object);
  }

  /// Ends one pin of `object` held in any thread's slots; false when none
  /// holds one.
  bool unpin_any(const void* object) noexcept {
    const std::size_t used = groups_used_.load(std::memory_order_acquire);
    for (std::size_t g = 0; g < used; ++g) {
      if (unpin_in(groups_[g], object)) return true;
    }
    return false;
  }

  /// Whether any thread's slots pin `object`.
  [[nodiscard]] bool holds(const void* object) const noexcept {
    const std::size_t used = groups_used_.load(std::memory_order_seq_cst);
    for (std::size_t g = 0; g < used; ++g) {
      for (const std::atomic<const void*>& entry : groups_[g].entries) {
        if (entry.load(std::memory_order_seq_cst) == object) return true;
      }
    }
    return false;
  }

 private:
  struct alignas(64) Group {
    std::array<std::atomic<const void*>, reader_slots_per_thread> entries{};
  };
  static bool unpin_in(Group& group, const void* object) noexcept {
    for (std::atomic<const void*>& entry : group.entries) {
      const void* expected = object;
      if (entry.load(std::memory_order_relaxed) == object &&
          entry.compare_exchange_strong(expected, nullptr, std::memory_order_release, std::memory_order_relaxed)) {
        return true;
      }
    }
    return false;
  }

  std::array<Group, thread_stripe_count> groups_{};
  // Groups that have ever held a pin: holds() looks at no others.
  alignas(64) std::atomic<std::size_t> groups_used_{0};
};

/// The process's slots: objects of every manager share them (an entry is
/// an object's address, unique while the object lives and is pinned).
inline ReaderSlots& reader_slots() noexcept {
  static ReaderSlots slots;
  return slots;
}

}  // namespace cachedarrays::detail
