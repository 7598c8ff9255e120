// Reads that skip the runtime's lock (runtime/unlocked_access-inl.hpp): the
// policy hears every will_read it asks for (at once, or deferred and
// coalesced, before the next locked call), an object that moves is asked
// about anew, the counters count what skipped the lock, and readers on many
// threads see their data whole while other threads move objects.
#include <doctest/doctest.h>

#include <atomic>
#include <cstdint>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "cachedarrays/cachedarrays.hpp"
#include "cachedarrays/manager/thread_stripes.hpp"
#include "cachedarrays/policy/cachedarrays_policy.hpp"
#include "cachedarrays/policy/moves.hpp"
#include "cachedarrays/runtime/placement_lock.hpp"
#include "listening_policy.hpp"
#include "test_support.hpp"

namespace ca = cachedarrays;

using test::read_of;

TEST_CASE("unlocked reads: a deferred will_read reaches the policy once, before the next locked call") {
  test::Listening l(ca::HintDelivery::deferred, ca::HintDelivery::under_lock);
  auto a = l.rt.array<float>(256);
  auto b = l.rt.array<float>(256);
  // The answer is asked for at placement, and holds while nothing moves.
  CHECK(a.object().read_hint_delivery() == ca::HintDelivery::deferred);
  const int asked = l.policy->asked;
  for (int i = 0; i < 5; ++i) {
    { auto r = a.read(); }
    { auto r = b.read(); }
    l.rt.kernel(ca::reads(a, b), [](std::span<const float>, std::span<const float>) {});
    a.will_read();
  }
  // Nothing was delivered under the lock yet, and the policy was not asked again.
  CHECK(l.policy->heard.empty());
  CHECK(l.policy->asked == asked);
  l.rt.collect();
  // Each object's reads arrive as one hint, oldest first, before the call
  // that took the lock.
  REQUIRE(l.policy->heard.size() == 3);
  CHECK(l.policy->heard[0] == read_of(a));
  CHECK(l.policy->heard[1] == read_of(b));
  CHECK(l.policy->heard[2] == "collect");
}

TEST_CASE("unlocked reads: a policy that asks for every hint under the lock hears every one at once") {
  test::Listening l(ca::HintDelivery::under_lock, ca::HintDelivery::under_lock);
  auto a = l.rt.array<float>(256);
  for (int i = 0; i < 4; ++i) {
    auto r = a.read();
  }
  a.will_read();
  CHECK(l.policy->heard.size() == 5);
  CHECK(a.object().read_hint_delivery() == ca::HintDelivery::under_lock);
}

TEST_CASE("unlocked reads: an unneeded will_read is never delivered") {
  test::Listening l(ca::HintDelivery::unneeded, ca::HintDelivery::under_lock);
  auto a = l.rt.array<float>(256);
  for (int i = 0; i < 4; ++i) {
    auto r = a.read();
  }
  a.will_read();
  l.rt.collect();
  CHECK(l.policy->heard == std::vector<std::string>{"collect"});
}

TEST_CASE("unlocked reads: an object that moves is asked about anew, and its reads take the lock meanwhile") {
  test::Listening l(ca::HintDelivery::deferred, ca::HintDelivery::under_lock);
  auto a = l.rt.array<float>(256);
  {
    auto w = a.write();
    w[3] = 7.0f;
  }
  REQUIRE(a.object().read_hint_delivery() == ca::HintDelivery::deferred);
  {
    auto guard = l.rt.lock();
    ca::DataManager& dm = l.rt.manager();
    REQUIRE(ca::policy::evict(dm, a.object(), 0, 1).moved);
    // setprimary forgot the answer given for the fast place.
    CHECK(a.object().read_hint_delivery() == ca::HintDelivery::under_lock);
  }
  l.policy->heard.clear();
  {
    auto r = a.read();  // under the lock: heard at once; the policy now says under_lock (slow place)
    CHECK(r[3] == 7.0f);
  }
  CHECK(l.policy->heard == std::vector<std::string>{read_of(a)});
  CHECK(a.object().read_hint_delivery() == ca::HintDelivery::under_lock);
}

TEST_CASE("unlocked reads: the counters count them, and a trace makes reads take the lock") {
  ca::Runtime rt{test::two_tiers(), std::make_unique<ca::policy::CachedArraysPolicy>(ca::policy::mode::LM)};
  auto a = rt.array<float>(1024);
  rt.begin_iteration();
  const ca::Stats before = rt.stats();
  for (int i = 0; i < 10; ++i) {
    auto r = a.read();
  }
  const ca::Stats after = rt.stats();
  CHECK(after.accesses - before.accesses == 10);
  CHECK(after.kernel_bytes_read[0] - before.kernel_bytes_read[0] == 10 * 1024 * sizeof(float));
  CHECK(rt.kernels_in_iteration() == 10);
  rt.begin_iteration();
  CHECK(rt.kernels_in_iteration() == 0);

  ca::Trace& trace = rt.start_trace();
  for (int i = 0; i < 3; ++i) {
    auto r = a.read();
  }
  rt.stop_trace();
  int kernels = 0;
  for (const ca::TraceEvent& e : trace.events()) kernels += e.kind == ca::TraceKind::kernel_begin ? 1 : 0;
  CHECK(kernels == 3);
}

TEST_CASE("unlocked reads: CA:LM defers reads of fast objects and needs none of slow ones; LMP moves them") {
  for (const bool prefetch : {false, true}) {
    CAPTURE(prefetch);
    ca::Runtime rt{test::two_tiers(1 << 20, 8 << 20), std::make_unique<ca::policy::CachedArraysPolicy>(
                                                          prefetch ? ca::policy::mode::LMP : ca::policy::mode::LM)};
    auto a = rt.array<float>(1024);
    CHECK(a.object().read_hint_delivery() == ca::HintDelivery::deferred);
    {
      auto guard = rt.lock();
      REQUIRE(ca::policy::evict(rt.manager(), a.object(), 0, 1).moved);
    }
    a.archive();  // a locked hint: the policy is asked about the slow place
    CHECK(a.object().read_hint_delivery() == (prefetch ? ca::HintDelivery::under_lock : ca::HintDelivery::unneeded));
    { auto r = a.read(); }
    const ca::DeviceId device = [&] {
      auto guard = rt.lock();
      return rt.manager().device(*rt.manager().getprimary(a.object()));
    }();
    CHECK(device == (prefetch ? 0u : 1u));
  }
}

TEST_CASE("unlocked reads: readers on many threads see their data whole while other threads move objects") {
  // A fast tier that holds a quarter of the arrays: the writers' accesses
  // keep evicting and bringing back, while readers read without the lock
  // whenever their array is in fast memory.
  constexpr int arrays = 16;
  test::QuarterFastArrays setting(arrays, 2048, [](int i) { return static_cast<std::uint64_t>(i); });  // 16 KiB each
  ca::Runtime& rt = setting.rt;
  std::vector<ca::CachedArray<std::uint64_t>>& data = setting.data;
  // Readers read the first half; the writer writes the second half (a
  // guard excludes no thread, so a write beside a read of one array would
  // be the program's race) and archives arrays of both halves.
  constexpr int read_only = arrays / 2;
  std::atomic<int> bad{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 3; ++t) {
    threads.emplace_back([&, t] {
      for (int k = 0; k < 3000; ++k) {
        const int i = (t * 5 + k) % read_only;
        auto r = data[static_cast<std::size_t>(i)].read();
        if (!test::words_hold(r, static_cast<std::uint64_t>(i))) bad.fetch_add(1);
      }
    });
  }
  threads.emplace_back([&] {
    for (int k = 0; k < 600; ++k) {
      const int i = read_only + (k * 7) % (arrays - read_only);
      auto w = data[static_cast<std::size_t>(i)].write();
      test::fill_words(w, static_cast<std::uint64_t>(i));
      if (k % 5 == 0) data[static_cast<std::size_t>(k % arrays)].archive();
    }
  });
  for (auto& th : threads) th.join();
  CHECK(bad.load() == 0);
  auto guard = rt.lock();
  rt.manager().check_invariants(/*verify_contents=*/true);
  CHECK(rt.manager().stats().devices[0].evictions > 0);
}

TEST_CASE("thread stripes: sums are exact with more threads than stripes, and numbers of ended threads are reused") {
  ca::ThreadStripes<2> stripes;
  const int threads = static_cast<int>(ca::thread_stripe_count) + 16;
  std::vector<std::thread> workers;
  std::atomic<int> ready{0};
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&] {
      // Every thread stays alive until all have added, so more than
      // thread_stripe_count numbers are live at once: some share the overflow.
      for (int k = 0; k < 1000; ++k) stripes.add<2>({0, 1}, {1, 2});
      ready.fetch_add(1);
      while (ready.load() < threads) std::this_thread::yield();
    });
  }
  for (auto& w : workers) w.join();
  CHECK(stripes.sum(0) == static_cast<std::uint64_t>(threads) * 1000);
  CHECK(stripes.sum(1) == static_cast<std::uint64_t>(threads) * 2000);
  // One thread after they all ended gets a number they gave back.
  std::size_t number = 0;
  std::thread([&] { number = ca::detail::this_thread_number(); }).join();
  CHECK(number < static_cast<std::size_t>(threads));
}

TEST_CASE("placement lock: excludes, and its sequence is odd exactly while held") {
  ca::PlacementLock lock;
  CHECK(lock.sequence() % 2 == 0);
  lock.lock();
  CHECK(lock.sequence() % 2 == 1);
  lock.unlock();
  CHECK(lock.sequence() == 2);
  // A plain counter, incremented under the lock from threads that outnumber
  // the cores: some of them sleep on the futex and must be woken.
  std::uint64_t counter = 0;
  std::vector<std::thread> threads;
  for (int t = 0; t < 6; ++t) {
    threads.emplace_back([&] {
      for (int k = 0; k < 20000; ++k) {
        std::lock_guard guard(lock);
        ++counter;
      }
    });
  }
  for (auto& th : threads) th.join();
  CHECK(counter == 6u * 20000u);
  CHECK(lock.sequence() == 2u + 2u * 6u * 20000u);
}
