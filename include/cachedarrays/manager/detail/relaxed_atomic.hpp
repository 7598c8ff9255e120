// A field that lock holders write and that a thread without the runtime's
// lock may read between two loads of the lock's sequence (the unlocked reads'
// and writes' check, runtime/unlocked_access-inl.hpp). Such a read can
// overlap a lock holder's write; the second load of the sequence then
// discards what it read, but a plain read overlapping a plain write is still
// a data race in C++ (and ThreadSanitizer reports it). A seqlock's data must
// therefore be atomic; relaxed order is enough, because the sequence's own
// loads and stores order them. Relaxed loads and stores of a word compile to
// plain moves, so the lock holders' code pays nothing for it.
#pragma once

#include <atomic>

namespace cachedarrays::detail {

/// A T read and written with relaxed atomics, used as a plain T: reads
/// convert, writes assign. Copying copies the value. Read-modify-writes are
/// not atomic (they are a load and a store): only lock holders write.
template <typename T>
class RelaxedAtomic {
 public:
  RelaxedAtomic() noexcept = default;
  RelaxedAtomic(T value) noexcept : value_(value) {}
  RelaxedAtomic(const RelaxedAtomic& other) noexcept : value_(other.load()) {}
  RelaxedAtomic& operator=(const RelaxedAtomic& other) noexcept {
    store(other.load());
    return *this;
  }
  RelaxedAtomic& operator=(T value) noexcept {
    store(value);
    return *this;
  }
  operator T() const noexcept { return load(); }
  [[nodiscard]] T load() const noexcept { return value_.load(std::memory_order_relaxed); }
  void store(T value) noexcept { value_.store(value, std::memory_order_relaxed); }
  /// For pointer fields: the pointee, as a plain pointer would give.
  T operator->() const noexcept { return load(); }

 private:
  std::atomic<T> value_{};
};

}  // namespace cachedarrays::detail
