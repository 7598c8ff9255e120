// Counters that threads add to without sharing a cache line. A counter that
// every thread increments with one atomic add makes its cache line bounce
// between the cores, and two threads then count slower than one. Here each
// thread adds to a stripe of its own: while it is the stripe's only writer,
// an add is a plain load and store (no locked instruction), and a reader sums
// the stripes. Threads are numbered when they first add; a thread that ends
// gives its number back, so a program that makes short-lived threads keeps
// reusing the same stripes. Threads that find every number taken share one
// overflow stripe, with atomic read-modify-writes.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>

namespace cachedarrays {

/// Stripes per ThreadStripes: live threads up to this many each write their own.
inline constexpr std::size_t thread_stripe_count = 64;

namespace detail {

// The number of a thread that has ended: its adds (from destructors of
// other thread-locals) go to the shared overflow stripe.
inline constexpr std::size_t ended_thread_number = thread_stripe_count;

// The calling thread's number + 1 (0: none yet). Initial-exec: reading it is
// one instruction, where the general model calls into the dynamic linker on
// every add.
inline std::size_t& thread_number_plus_one() noexcept {
  static thread_local std::size_t number __attribute__((tls_model("initial-exec"))) = 0;
  return number;
}

// Which thread numbers live threads hold. An array of flags rather than a
// list under a mutex: claiming and giving back are one atomic each, and
// nothing here allocates or needs destroying at exit.
inline std::array<std::atomic<bool>, thread_stripe_count>& thread_numbers_taken() noexcept {
  static std::array<std::atomic<bool>, thread_stripe_count> taken{};
  return taken;
}

// A thread's claim on a number, given back when the thread ends. With every
// number taken the thread counts in the overflow stripe for its life.
class ThreadNumber {
 public:
  ThreadNumber() noexcept {
    for (std::size_t i = 0; i < thread_stripe_count; ++i) {
      // Acquire: the stripe's last writer gave the number back with a release.
      if (!thread_numbers_taken()[i].exchange(true, std::memory_order_acq_rel)) {
        number_ = i;
        break;
      }
    }
    thread_number_plus_one() = number_ + 1;
  }
  ~ThreadNumber() {
    thread_number_plus_one() = ended_thread_number + 1;
    if (number_ < thread_stripe_count) thread_numbers_taken()[number_].store(false, std::memory_order_release);
  }
  ThreadNumber(const ThreadNumber&) = delete;
  ThreadNumber& operator=(const ThreadNumber&) = delete;

  [[nodiscard]] std::size_t get() const noexcept { return number_; }

 private:
  std::size_t number_ = thread_stripe_count;
};

inline std::size_t this_thread_number() {
  if (const std::size_t known = thread_number_plus_one(); known != 0) return known - 1;
  thread_local const ThreadNumber number;
  return number.get();
}

}  // namespace detail

/// `Fields` counters, added to by many threads and summed by any: each
/// thread adds to a stripe of its own (see the file's comment for why).
/// Adds and sums are safe from any thread; a sum taken while others add sees
/// each add either whole or not at all.
template <std::size_t Fields>
class ThreadStripes {
  struct Stripe;  // below: one thread's counters

 public:
  /// Adds `value` to counter `field` (< Fields) of the calling thread's stripe.
  void add(std::size_t field, std::uint64_t value) { add<1>({field}, {value}); }
  /// Adds values[i] to counter fields[i] (< Fields) for every i, finding the
  /// calling thread's stripe once.
  template <std::size_t N>
  void add(const std::array<std::size_t, N>& fields, const std::array<std::uint64_t, N>& values) {
    Adder add_to = adder();
    for (std::size_t i = 0; i < N; ++i) add_to(fields[i], values[i]);
  }
  /// The calling thread's stripe, found once, for a caller that adds to
  /// several counters in turn (a kernel's arguments).
  class Adder {
   public:
    /// Adds `value` to counter `field` (< Fields).
    void operator()(std::size_t field, std::uint64_t value) noexcept {
      std::atomic<std::uint64_t>& counter = stripe_.counts[field];
      if (own_) {
        counter.store(counter.load(std::memory_order_relaxed) + value, std::memory_order_relaxed);
      } else {
        counter.fetch_add(value, std::memory_order_relaxed);
      }
    }

   private:
    friend class ThreadStripes;
    Adder(Stripe& stripe, bool own) noexcept : stripe_(stripe), own_(own) {}
    Stripe& stripe_;
    bool own_;  // the stripe's only writer; else the shared overflow stripe
  };
  /// An Adder for the calling thread's stripe. It must not outlive the call
  /// that made it, nor pass to another thread.
  [[nodiscard]] Adder adder() noexcept {
    const std::size_t number = detail::this_thread_number();
    if (number < thread_stripe_count) return Adder(stripes_[number], true);
    return Adder(overflow_, false);
  }
  /// Counter `field` summed over every stripe.
  [[nodiscard]] std::uint64_t sum(std::size_t field) const noexcept {
    std::uint64_t total = overflow_.counts[field].load(std::memory_order_relaxed);
    for (const Stripe& s : stripes_) total += s.counts[field].load(std::memory_order_relaxed);
    return total;
  }

 private:
  // Each stripe on lines of its own, in 128-byte pairs: x86 cores fetch
  // lines in aligned pairs (the adjacent-line prefetcher), so neighbours
  // closer than that still slow each other down.
  struct alignas(128) Stripe {
    std::array<std::atomic<std::uint64_t>, Fields> counts{};
  };
  std::array<Stripe, thread_stripe_count> stripes_{};
  Stripe overflow_;  // shared by the threads past thread_stripe_count
};

}  // namespace cachedarrays
