// Writes that skip the runtime's lock (runtime/unlocked_access-inl.hpp,
// DataManager::writable_unlocked): only where nothing else can observe the
// object's regions — its primary already dirty, every other region already
// stale, no copy in flight — and only when the policy lets its will_write
// come later. A write anywhere else takes the lock and makes every copy
// stale, as before; the policy hears every will_write it asks for; the
// counters count what skipped the lock; and writers on several threads,
// beside a thread that keeps moving objects, lose nothing.
#include <doctest/doctest.h>

#include <atomic>
#include <cstdint>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "cachedarrays/cachedarrays.hpp"
#include "cachedarrays/policy/cachedarrays_policy.hpp"
#include "cachedarrays/policy/moves.hpp"
#include "listening_policy.hpp"
#include "test_support.hpp"

namespace ca = cachedarrays;

using test::write_of;

TEST_CASE("unlocked writes: a write to a dirty primary skips the lock, and its will_write arrives once, deferred") {
  test::Listening l(ca::HintDelivery::under_lock, ca::HintDelivery::deferred);
  auto a = l.rt.array<float>(256);
  // The first write dirties the primary: under the lock, heard at once.
  {
    auto w = a.write();
    w[0] = 1.0f;
  }
  REQUIRE(l.policy->heard == std::vector<std::string>{write_of(a)});
  CHECK(a.object().write_hint_delivery() == ca::HintDelivery::deferred);
  l.policy->heard.clear();
  for (int i = 0; i < 5; ++i) {
    {
      auto w = a.write();
      w[1] = static_cast<float>(i);
    }
    l.rt.kernel(ca::writes(a), [i](std::span<float> x) { x[2] = static_cast<float>(i); });
  }
  CHECK(l.policy->heard.empty());  // nothing under the lock yet
  l.rt.collect();
  CHECK(l.policy->heard == std::vector<std::string>{write_of(a), "collect"});
  auto r = a.read();
  CHECK(r[1] == 4.0f);
  CHECK(r[2] == 4.0f);
}

TEST_CASE("unlocked writes: a policy that asks for every will_write under the lock hears every one at once") {
  test::Listening l(ca::HintDelivery::under_lock, ca::HintDelivery::under_lock);
  auto a = l.rt.array<float>(256);
  for (int i = 0; i < 4; ++i) {
    auto w = a.write();
    w[0] = static_cast<float>(i);
  }
  CHECK(l.policy->heard.size() == 4);
}

TEST_CASE("unlocked writes: a valid copy sends the write through the lock, which makes the copy stale") {
  test::Listening l(ca::HintDelivery::under_lock, ca::HintDelivery::deferred);
  auto a = l.rt.array<float>(256);
  {
    auto w = a.write();
    w[0] = 1.0f;
  }  // dirty, and no other region: writable without the lock
  ca::Region* copy = nullptr;
  {
    auto guard = l.rt.lock();
    ca::DataManager& dm = l.rt.manager();
    CHECK(dm.writable_unlocked(a.object()));
    // A valid secondary on the slow tier, as a write-back leaves one.
    copy = dm.allocate(1, a.object().bytes());
    REQUIRE(copy != nullptr);
    dm.copyto(*copy, *dm.getprimary(a.object()));
    dm.link(*dm.getprimary(a.object()), *copy);
    REQUIRE(dm.isvalid(*copy));
    CHECK_FALSE(dm.writable_unlocked(a.object()));
  }
  l.policy->heard.clear();
  {
    auto w = a.write();
    w[0] = 2.0f;
  }
  // Under the lock: heard at once, and the copy of the old contents no longer counts.
  CHECK(l.policy->heard == std::vector<std::string>{write_of(a)});
  {
    auto guard = l.rt.lock();
    ca::DataManager& dm = l.rt.manager();
    CHECK_FALSE(dm.isvalid(*copy));
    // Stale now: a further write changes nothing the copy's validity rests on.
    CHECK(dm.writable_unlocked(a.object()));
    dm.check_invariants(/*verify_contents=*/true);
  }
  auto r = a.read();
  CHECK(r[0] == 2.0f);
}

TEST_CASE("unlocked writes: a clean primary, a copy in flight or a policy that says under_lock take the lock") {
  ca::Runtime rt{test::two_tiers(), std::make_unique<ca::policy::CachedArraysPolicy>(ca::policy::mode::LM)};
  auto a = rt.array<float>(1024);
  {
    auto guard = rt.lock();
    CHECK_FALSE(rt.manager().writable_unlocked(a.object()));  // clean: a write must dirty it and version it
  }
  {
    auto w = a.write();
    w[0] = 1.0f;
  }
  {
    auto guard = rt.lock();
    ca::DataManager& dm = rt.manager();
    REQUIRE(dm.writable_unlocked(a.object()));
    ca::Region* copy = dm.allocate(1, a.object().bytes());
    REQUIRE(copy != nullptr);
    ca::Fence fence = dm.copyto_async(*copy, *dm.getprimary(a.object()));
    CHECK_FALSE(dm.writable_unlocked(a.object()));  // a copy reads the primary
    fence.wait();
    dm.free(*copy);
  }
  // CA:LM in slow memory: will_write brings the object in, so it is under the lock.
  {
    auto guard = rt.lock();
    REQUIRE(ca::policy::evict(rt.manager(), a.object(), 0, 1).moved);
  }
  a.archive();  // a locked hint: the policy is asked about the slow place
  CHECK(a.object().write_hint_delivery() == ca::HintDelivery::under_lock);
}

TEST_CASE("unlocked writes: a deferred will_write reaches the policy before the lock holder's own work") {
  test::Listening l(ca::HintDelivery::under_lock, ca::HintDelivery::deferred);
  auto a = l.rt.array<float>(256);
  {
    auto w = a.write();
    w[0] = 1.0f;
  }
  {
    auto w = a.write();
    w[0] = 2.0f;
  }  // skips the lock: deferred
  l.policy->heard.clear();
  {
    auto guard = l.rt.lock();  // delivers it before anything moves
    CHECK(l.policy->heard == std::vector<std::string>{write_of(a)});
    REQUIRE(ca::policy::evict(l.rt.manager(), a.object(), 0, 1).moved);
  }
  l.rt.collect();
  CHECK(l.policy->heard == std::vector<std::string>{write_of(a), "collect"});
  auto r = a.read();
  CHECK(r[0] == 2.0f);
}

TEST_CASE("unlocked writes: the counters count them") {
  ca::Runtime rt{test::two_tiers(), std::make_unique<ca::policy::CachedArraysPolicy>(ca::policy::mode::LM)};
  auto a = rt.array<float>(1024);
  {
    auto w = a.write();
    w[0] = 1.0f;
  }
  rt.begin_iteration();
  const ca::Stats before = rt.stats();
  for (int i = 0; i < 10; ++i) {
    auto w = a.write();
    w[0] = static_cast<float>(i);
  }
  const ca::Stats after = rt.stats();
  CHECK(after.accesses - before.accesses == 10);
  CHECK(after.kernel_bytes_written[0] - before.kernel_bytes_written[0] == 10 * 1024 * sizeof(float));
  CHECK(rt.kernels_in_iteration() == 10);
}

TEST_CASE(
    "unlocked writes: writers on several threads beside a thread forcing evictions, each array ending as its last "
    "writer left it") {
  // A fast tier of a quarter of the arrays: the evicting thread's archives
  // and accesses keep moving arrays out and in while the writers write
  // their own arrays, mostly without the lock.
  constexpr int writers = 3;
  constexpr int per_writer = 4;
  constexpr int arrays = writers * per_writer;
  test::QuarterFastArrays setting(arrays, 2048, [](int) { return std::uint64_t{0}; });  // 16 KiB each
  ca::Runtime& rt = setting.rt;
  std::vector<ca::CachedArray<std::uint64_t>>& data = setting.data;
  // The last seed each writer wrote into each of its arrays.
  std::vector<std::uint64_t> last(arrays, 0);
  std::atomic<bool> writing{true};
  std::vector<std::thread> threads;
  for (int t = 0; t < writers; ++t) {
    threads.emplace_back([&, t] {
      for (std::uint64_t k = 1; k <= 1500; ++k) {
        const std::size_t i = static_cast<std::size_t>(t * per_writer) + k % per_writer;
        const std::uint64_t seed = k * 131 + i;
        if (k % 2 == 0) {
          auto w = data[i].write();
          test::fill_words(w, seed);
        } else {
          rt.kernel(ca::writes(data[i]), [seed](std::span<std::uint64_t> w) { test::fill_words(w, seed); });
        }
        last[i] = seed;
      }
    });
  }
  std::thread evicting([&] {
    std::uint64_t k = 0;
    while (writing.load()) {
      const std::size_t i = (k * 5) % arrays;
      data[i].archive();
      {
        auto guard = rt.lock();
        // Force a write-back of an array no writer holds open right now.
        (void)ca::policy::evict(rt.manager(), data[i].object(), 0, 1);
      }
      ++k;
    }
  });
  for (auto& th : threads) th.join();
  writing.store(false);
  evicting.join();
  for (int i = 0; i < arrays; ++i) {
    CAPTURE(i);
    auto r = data[static_cast<std::size_t>(i)].read();
    CHECK(test::words_hold(r, last[static_cast<std::size_t>(i)]));
  }
  auto guard = rt.lock();
  rt.manager().check_invariants(/*verify_contents=*/true);
  CHECK(rt.manager().stats().devices[0].evictions > 0);
}
