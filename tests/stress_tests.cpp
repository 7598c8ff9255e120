// Multi-threaded stress of the Runtime (docs/building.md, "The test suite", after mimalloc's
// test-stress.c): four threads create arrays, write them with write() and
// kernel(), read and verify them, send hints and retire them, while a shared
// set of arrays is read by every thread. Run once under first-touch (nothing
// moves) and once under a test policy that moves data on every hint, so
// regions are copied, evicted and defragmented while other threads access
// theirs. Afterwards the manager's invariants hold (contents included) and
// the stats add up. Meant to run clean under CACHEDARRAYS_SANITIZE=thread.
//
// Iterations, not time, bound each thread; CACHEDARRAYS_STRESS_ITERS sets
// them (default 10,000 per thread), CACHEDARRAYS_TEST_SEED the random choices.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "cachedarrays/cachedarrays.hpp"
#include "test_support.hpp"

namespace {

namespace ca = cachedarrays;

using test::MiB;
constexpr int thread_count = 4;
constexpr std::size_t private_arrays_max = 8;

using test::fill_words;
using test::words_hold;

// Element counts skewed small: 8 B .. 256 KiB arrays (under the copy
// engine's parallel threshold, so copies stay on the calling thread).
std::size_t random_count(test::SplitMixRng& rng) {
  const std::uint64_t c = rng.below(100);
  if (c < 50) return 1 + rng.below(512);
  if (c < 85) return 513 + rng.below(8 * 1024);
  return 8 * 1024 + rng.below(24 * 1024);
}

// A policy that moves data on every hint, built from the paper's two moves:
// will_read / will_write prefetch into DRAM, making room with evictfrom over
// a rotating window (an evictfrom over a pinned primary is refused, so it
// tries the next window); archive evicts to the DAX heap; collect defrags.
// It keeps the paper's invariant: an object's DRAM region is its primary.
// With `async_writeback`, archive instead starts an asynchronous copy of a
// dirty DRAM primary into its DAX region and leaves it in flight, so that
// the mover's thread copies while the workers read, write, evict and retire
// the same objects (invariant 7 under contention).
class MovingPolicy final : public ca::policy::Policy {
 public:
  explicit MovingPolicy(bool async_writeback = false) : async_writeback_(async_writeback) {}
  [[nodiscard]] std::string name() const override { return async_writeback_ ? "test-moving-async" : "test-moving"; }

  [[nodiscard]] bool place(ca::Object& object) override {
    ca::DataManager& dm = manager();
    for (ca::DeviceId d = 0; d < dm.device_count(); ++d) {
      if (ca::Region* r = dm.allocate(d, object.bytes())) {
        dm.setprimary(object, *r);
        return true;
      }
    }
    return false;
  }
  void will_use(ca::Object& object) override {
    ca::policy::prefetch(manager(), object, fast, slow, [this](std::uint64_t bytes) { return make_room(bytes); });
  }
  void archive(ca::Object& object) override {
    if (!async_writeback_) {
      ca::policy::evict(manager(), object, fast, slow);
      return;
    }
    ca::DataManager& dm = manager();
    ca::Region& primary = *dm.getprimary(object);
    if (dm.device(primary) != fast || !dm.isdirty(primary)) return;
    ca::Region* backup = dm.getlinked(primary, slow);
    if (backup == nullptr) {
      backup = dm.allocate(slow, object.bytes());
      if (backup == nullptr) return;
      dm.link(primary, *backup);
    }
    (void)dm.copyto_async(*backup, primary);
  }
  void collect() override { manager().defrag(fast); }

 private:
  static constexpr ca::DeviceId fast = 0;
  static constexpr ca::DeviceId slow = 1;

  bool make_room(std::uint64_t bytes) {
    ca::DataManager& dm = manager();
    const std::uint64_t capacity = dm.capacity(fast);
    if (bytes > capacity) return false;
    for (int attempt = 0; attempt < 4; ++attempt) {
      if (next_start_ + bytes > capacity) next_start_ = 0;
      const std::uint64_t start = next_start_;
      next_start_ += bytes;
      try {
        const bool cleared = dm.evictfrom(fast, start, bytes, [&dm](ca::Region& r) {
          ca::Object* o = dm.parent(r);
          if (o == nullptr || dm.getprimary(*o) != &r) {
            dm.free(r);  // a copy (or a stray region): dropping it loses nothing
            return true;
          }
          return ca::policy::evict(dm, *o, fast, slow).moved;
        });
        if (cleared) return true;
      } catch (const ca::pinned_error&) {
        // Another thread's access is open on this window: try the next.
      }
    }
    return false;
  }

  std::uint64_t next_start_ = 0;
  bool async_writeback_;
};

// The first failure seen by any thread (doctest's REQUIRE cannot throw out
// of a thread), reported by the main thread.
class Failures {
 public:
  void add(const std::string& what) {
    if (count_.fetch_add(1) == 0) {
      std::lock_guard guard(mutex_);
      first_ = what;
    }
  }
  [[nodiscard]] std::uint64_t count() const { return count_.load(); }
  [[nodiscard]] std::string first() const {
    std::lock_guard guard(mutex_);
    return first_;
  }

 private:
  std::atomic<std::uint64_t> count_{0};
  mutable std::mutex mutex_;
  std::string first_;
};

struct Shared {
  ca::CachedArray<std::uint64_t> array;
  std::uint64_t seed;
};

struct Private {
  ca::CachedArray<std::uint64_t> array;
  std::uint64_t seed;
};

struct Tally {  // what the threads did, for the report and the stats check
  std::atomic<std::uint64_t> created{0}, retired{0}, kernels{0}, reads{0}, hints{0}, out_of_memory{0};
};

void worker(ca::Runtime& rt, std::vector<Shared>& shared, std::uint64_t seed, int index, std::uint64_t iterations,
            Failures& failures, Tally& tally) {
  test::SplitMixRng rng{seed * 1000003 + static_cast<std::uint64_t>(index)};  // one per thread
  std::vector<Private> mine;
  std::uint64_t next_seed = (static_cast<std::uint64_t>(index) + 1) << 40;
  const auto fail = [&](const std::string& what) { failures.add("thread " + std::to_string(index) + ": " + what); };
  try {
    for (std::uint64_t it = 0; it < iterations; ++it) {
      const std::uint64_t op = rng.below(100);
      if (mine.size() < 2 || (op < 18 && mine.size() < private_arrays_max)) {
        // Create and write through a write() guard.
        Private p{rt.array<std::uint64_t>(random_count(rng)), ++next_seed};
        {
          auto w = p.array.write();
          fill_words(w.span(), p.seed);
        }
        mine.push_back(std::move(p));
        ++tally.created;
      } else if (op < 40) {
        // kernel(reads(a, shared), writes(b)): verify both inputs, write b.
        Private& a = mine[rng.below(mine.size())];
        Private& b = mine[rng.below(mine.size())];
        if (&a == &b) continue;
        const Shared& s = shared[rng.below(shared.size())];  // shared arrays are only read
        const std::uint64_t new_seed = ++next_seed;
        rt.kernel(ca::reads(a.array, s.array), ca::writes(b.array),
                  [&](std::span<const std::uint64_t> x, std::span<const std::uint64_t> y, std::span<std::uint64_t> z) {
                    if (!words_hold(x, a.seed))
                      fail("kernel input array #" + std::to_string(a.array.id()) + " changed");
                    if (!words_hold(y, s.seed)) fail("shared array #" + std::to_string(s.array.id()) + " changed");
                    fill_words(z, new_seed);
                  });
        b.seed = new_seed;
        ++tally.kernels;
      } else if (op < 50) {
        // One-argument kernel rewriting an array in place.
        Private& a = mine[rng.below(mine.size())];
        const std::uint64_t new_seed = ++next_seed;
        rt.kernel(ca::writes(a.array), [&](std::span<std::uint64_t> z) {
          if (!words_hold(z, a.seed)) fail("array #" + std::to_string(a.array.id()) + " changed before a rewrite");
          fill_words(z, new_seed);
        });
        a.seed = new_seed;
        ++tally.kernels;
      } else if (op < 62) {
        // Read and verify, a private array or a shared one.
        if (rng.below(2) == 0) {
          const Private& a = mine[rng.below(mine.size())];
          auto r = a.array.read();
          if (!words_hold(r.span(), a.seed)) fail("array #" + std::to_string(a.array.id()) + " changed");
        } else {
          const Shared& s = shared[rng.below(shared.size())];
          auto r = s.array.read();
          if (!words_hold(r.span(), s.seed)) fail("shared array #" + std::to_string(s.array.id()) + " changed");
        }
        ++tally.reads;
      } else if (op < 70) {
        // Two shared arrays read at once.
        const Shared& s1 = shared[rng.below(shared.size())];
        const Shared& s2 = shared[rng.below(shared.size())];
        rt.kernel(ca::reads(s1.array, s2.array),
                  [&](std::span<const std::uint64_t> x, std::span<const std::uint64_t> y) {
                    if (!words_hold(x, s1.seed) || !words_hold(y, s2.seed)) fail("a shared array changed");
                  });
        ++tally.kernels;
      } else if (op < 90) {
        // Hints without an access, on private and shared arrays.
        const bool on_shared = rng.below(3) == 0;
        ca::CachedArray<std::uint64_t>& a =
            on_shared ? shared[rng.below(shared.size())].array : mine[rng.below(mine.size())].array;
        switch (rng.below(4)) {
          case 0: a.will_read(); break;
          case 1:
            if (!on_shared) a.will_write();
            break;
          case 2: a.archive(); break;
          default: a.will_use(); break;
        }
        ++tally.hints;
        if (rng.below(50) == 0) rt.collect();
      } else if (op < 98) {
        // Retire one (explicitly or by dropping the handle).
        const std::size_t i = rng.below(mine.size());
        if (rng.below(2) == 0) mine[i].array.retire();
        mine.erase(mine.begin() + static_cast<std::ptrdiff_t>(i));
        ++tally.retired;
      } else {
        // An array no device can hold: out_of_memory, and nothing else changes.
        try {
          auto huge = rt.array<std::uint64_t>(std::size_t{1} << 30);
          fail("an 8 GiB array was created");
        } catch (const ca::out_of_memory&) {
          ++tally.out_of_memory;
        }
      }
    }
    for (const Private& p : mine) {
      auto r = p.array.read();
      if (!words_hold(r.span(), p.seed)) fail("array #" + std::to_string(p.array.id()) + " changed");
    }
    tally.retired += mine.size();
    mine.clear();  // retires them
  } catch (const std::exception& e) {
    fail(std::string("unexpected exception: ") + e.what());
  }
}

void run_stress(std::unique_ptr<ca::policy::Policy> policy, std::uint64_t dram_bytes) {
  const std::uint64_t seed = test::test_seed(777);
  const std::uint64_t iterations = test::env_or("CACHEDARRAYS_STRESS_ITERS", 10000);
  CAPTURE(seed);
  CAPTURE(iterations);
  // No prefault: it runs a tbb::parallel_for, and Debian's libtbb is not
  // built with TSan, which then reports TBB's internal hand-offs as races
  // (tools/tsan.supp silences them in CI). Copies here stay under the copy
  // engine's parallel threshold, so this test runs no TBB code at all and is
  // clean under TSan even without the suppressions.
  std::vector<ca::DeviceSpec> devices = {ca::dram(dram_bytes, "fast"), ca::dax_file({}, 64 * MiB, "slow")};
  for (ca::DeviceSpec& d : devices) d.prefault = false;
  ca::Runtime rt(std::move(devices), std::move(policy));
  INFO("policy " << rt.policy_name());

  // Shared arrays: created and written before the threads start, then only read.
  test::SplitMixRng rng{seed};
  std::vector<Shared> shared;
  for (int i = 0; i < 6; ++i) {
    Shared s{rt.array<std::uint64_t>(random_count(rng)), 0xABCD0000ull + static_cast<std::uint64_t>(i)};
    fill_words(s.array.write().span(), s.seed);
    shared.push_back(std::move(s));
  }

  Failures failures;
  Tally tally;
  {
    std::vector<std::jthread> threads;
    for (int t = 0; t < thread_count; ++t) {
      threads.emplace_back(worker, std::ref(rt), std::ref(shared), seed, t, iterations, std::ref(failures),
                           std::ref(tally));
    }
  }
  INFO("first failure: " << failures.first());
  CHECK(failures.count() == 0);

  const ca::Stats stats = rt.stats();
  MESSAGE(rt.policy_name() << ": " << tally.created.load() << " arrays created, " << tally.kernels.load()
                           << " kernels, " << tally.reads.load() << " reads, " << tally.hints.load() << " hints, "
                           << tally.out_of_memory.load() << " out_of_memory; " << stats.total_bytes_copied()
                           << " bytes copied between tiers, " << stats.devices[0].evictions << " evictions from DRAM");
  {
    auto lock = rt.lock();
    REQUIRE_NOTHROW(rt.manager().check_invariants(true));
    std::uint64_t live = 0;
    rt.manager().for_each_object([&](const ca::Object& o) {
      ++live;
      CHECK_FALSE(o.pinned());
    });
    const ca::Stats& s = rt.manager().stats();
    CHECK(s.objects_created - s.objects_destroyed == live);
    CHECK(live == shared.size());  // every private array was retired
    // Creations that ran out of memory count too: their object existed until placement failed.
    CHECK(s.objects_created == shared.size() + tally.created.load() + tally.out_of_memory.load());
    std::uint64_t regions = 0;
    for (ca::DeviceId d = 0; d < rt.manager().device_count(); ++d) {
      CHECK(s.devices[d].live_regions == rt.manager().usage(d).live_regions);
      CHECK(s.devices[d].bytes_in_use == rt.manager().usage(d).bytes_used);
      CHECK(s.devices[d].allocations - s.devices[d].frees == s.devices[d].live_regions);
      regions += s.devices[d].live_regions;
    }
    CHECK(regions >= live);
  }
  for (const Shared& s : shared) CHECK(words_hold(s.array.read().span(), s.seed));
  if (rt.policy_name() != "first-touch") {  // data really moved while threads ran
    CHECK(stats.total_bytes_copied() > 0);
    CHECK(stats.devices[0].evictions > 0);
  }
  if (rt.policy_name() == "test-moving-async") {
    auto lock = rt.lock();
    rt.manager().finish_copies();
    MESSAGE("asynchronous write-backs: " << rt.manager().stats().async.copies << ", compute waited at "
                                         << rt.manager().stats().async.fence_waits << " fences");
    CHECK(rt.manager().stats().async.copies > 0);
    CHECK(rt.manager().stats().async.failures == 0);
  }
}

}  // namespace

TEST_CASE("stress: four threads share a runtime under first-touch") { run_stress(nullptr, 8 * MiB); }

TEST_CASE("stress: four threads share a runtime whose policy moves data on every hint") {
  run_stress(std::make_unique<MovingPolicy>(), 1 * MiB);  // small: evictfrom runs often
}

TEST_CASE("stress: four threads share a runtime whose policy leaves asynchronous write-backs in flight") {
  run_stress(std::make_unique<MovingPolicy>(/*async_writeback=*/true), 1 * MiB);
}

TEST_CASE("stress: four threads share a runtime under ca-lma (archived objects written back by the mover)") {
  // Threads interleave at random, so no program is followed here; what runs
  // concurrently is the background write-back of every archive hint beside
  // the compute threads' kernels, reads, evictions and retires.
  run_stress(std::make_unique<ca::policy::CachedArraysPolicy>(ca::policy::mode::LMA), 1 * MiB);
}
