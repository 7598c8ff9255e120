// Fault injection for tests (after PMDK's pmem_inject_fault_at and its
// negative tests): makes the Nth event of a kind fail, or each event with
// a given probability, so that the failure paths of the library run on demand:
//   allocation      a heap allocation finds no room (DataManager::allocate
//                   and allocate_at return null, as for a full heap);
//   copy            a copy between tiers fails half way, as a media error
//                   would (copyto throws copy_error; an asynchronous copy
//                   fails at its fence), its destination left torn;
//   policy_handler  a policy's handler throws before it runs (the Runtime
//                   calls it for a hint, an access, a kernel, a retire, ...);
//   mover_start     the mover's thread cannot be started (std::thread's
//                   resource_unavailable_try_again).
//
// Compiled in only where CACHEDARRAYS_FAULT_INJECTION is defined (the
// fault-injection test binary, built header-only); everywhere else
// CACHEDARRAYS_FAULT(site) is the constant `false` and costs nothing.
// The injector is process-wide and thread-safe (the mover's thread makes
// copies too); tests arm it through ScopedFaults, which disarms it again.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <random>

namespace cachedarrays::fault {

/// Where a fault can be injected (the file comment says what each does):
/// `allocation`, `copy`, `policy_handler`, `mover_start`.
enum class Site : std::uint8_t { allocation, copy, policy_handler, mover_start };
/// How many Site values there are.
inline constexpr std::size_t site_count = 4;

/// The site's name for messages: "allocation", "copy", "policy handler",
/// "mover start".
inline const char* to_string(Site site) noexcept {
  switch (site) {
    case Site::allocation: return "allocation";
    case Site::copy: return "copy";
    case Site::policy_handler: return "policy handler";
    case Site::mover_start: return "mover start";
  }
  return "?";
}

/// The process-wide, thread-safe fault injector: per Site, fails the nth
/// event or each event with a probability. Reached through instance(), in
/// tests through ScopedFaults.
class Injector {
 public:
  /// The one injector of the process.
  static Injector& instance() {
    static Injector injector;
    return injector;
  }

  /// The nth event of `site` from now on (1: the next) fails, once.
  void fail_nth(Site site, std::uint64_t nth) {
    std::lock_guard guard(mutex_);
    Plan& p = plans_[index(site)];
    p = {};
    p.nth = nth;
  }
  /// Each event of `site` fails with `probability` (0..1), drawn from a
  /// generator seeded with `seed`, so a failing run can be replayed.
  void fail_randomly(Site site, double probability, std::uint64_t seed) {
    std::lock_guard guard(mutex_);
    Plan& p = plans_[index(site)];
    p = {};
    p.probability = probability;
    p.engine.seed(seed);
  }
  /// Disarms every site and resets its counts: no event fails any more.
  void disarm() {
    std::lock_guard guard(mutex_);
    for (Plan& p : plans_) p = {};
  }
  /// Counts an event of `site`; true when it must fail.
  bool fires(Site site) {
    std::lock_guard guard(mutex_);
    Plan& p = plans_[index(site)];
    ++p.events;
    bool fail = false;
    if (p.nth != 0 && p.events == p.nth) fail = true;
    if (p.probability > 0 && std::uniform_real_distribution<double>(0, 1)(p.engine) < p.probability) fail = true;
    if (fail) ++p.fired;
    return fail;
  }
  /// Events of `site` seen since it was last armed.
  std::uint64_t events(Site site) {
    std::lock_guard guard(mutex_);
    return plans_[index(site)].events;
  }
  /// Events of `site` failed since it was last armed.
  std::uint64_t fired(Site site) {
    std::lock_guard guard(mutex_);
    return plans_[index(site)].fired;
  }

 private:
  struct Plan {
    std::uint64_t nth = 0;   // 0: not armed by count
    double probability = 0;  // 0: not armed by probability
    std::mt19937_64 engine{};
    std::uint64_t events = 0;
    std::uint64_t fired = 0;
  };
  static std::size_t index(Site site) noexcept { return static_cast<std::size_t>(site); }
  std::mutex mutex_;
  std::array<Plan, site_count> plans_{};
};

/// Disarms every site when the scope ends, so one test's faults never reach
/// the next one.
class ScopedFaults {
 public:
  /// Starts from a disarmed injector.
  ScopedFaults() { Injector::instance().disarm(); }
  /// Disarms every site again.
  ~ScopedFaults() { Injector::instance().disarm(); }
  ScopedFaults(const ScopedFaults&) = delete;
  ScopedFaults& operator=(const ScopedFaults&) = delete;
  /// The injector, to arm: `faults->fail_nth(Site::copy, 1)`.
  Injector* operator->() const { return &Injector::instance(); }
};

}  // namespace cachedarrays::fault

#ifdef CACHEDARRAYS_FAULT_INJECTION
#define CACHEDARRAYS_FAULT(site) (::cachedarrays::fault::Injector::instance().fires(::cachedarrays::fault::Site::site))
#else
#define CACHEDARRAYS_FAULT(site) false
#endif
