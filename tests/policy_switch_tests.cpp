// Switching a running program's policy (Runtime::switch_policy,
// policy::hand_over): for every ordered pair of built-in policies, a
// training-like program switched between iterations keeps every byte, every
// object stays where it was, no copy is left in flight, and the new policy
// runs the iterations after; a failing new policy leaves first-touch in
// charge with nothing lost; retires a policy never freed are freed; and
// reader threads read on across switches.
#include <doctest/doctest.h>

#include <atomic>
#include <map>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "switched_program.hpp"
#include "test_support.hpp"

namespace ca = cachedarrays;

namespace {

// Where the primary of each object the program still holds is (not those
// retired and held by a policy until its collection): device and address.
std::map<std::uint64_t, std::pair<ca::DeviceId, const std::byte*>> placement(ca::Runtime& rt) {
  auto guard = rt.lock();
  std::map<std::uint64_t, std::pair<ca::DeviceId, const std::byte*>> where;
  const ca::DataManager& dm = rt.manager();
  dm.for_each_object([&](const ca::Object& o) {
    if (o.history().retired) return;
    const ca::Region& primary = *dm.getprimary(o);
    where[o.id()] = {dm.device(primary), dm.pointer(primary)};
  });
  return where;
}

// No region of any object has a copy in flight.
bool nothing_in_flight(ca::Runtime& rt) {
  auto guard = rt.lock();
  const ca::DataManager& dm = rt.manager();
  bool idle = true;
  dm.for_each_object([&](const ca::Object& o) {
    for (ca::DeviceId d = 0; d < dm.device_count(); ++d) {
      if (const ca::Region* r = dm.getlinked(*dm.getprimary(o), d); r != nullptr && dm.in_flight(*r)) idle = false;
    }
  });
  return idle;
}

// The policy's copies land and its collection runs, twice: a move out
// that waited for its write-back is made once the write-back has landed.
void settle(ca::Runtime& rt) {
  for (int i = 0; i < 2; ++i) {
    {
      auto guard = rt.lock();
      rt.manager().finish_copies();
    }
    rt.collect();
  }
}

// Every ordered pair of `names` (a name with itself included), as one walk
// that starts and ends at the first name: an Eulerian circuit of the
// complete directed graph with loops (Hierholzer's algorithm), which exists
// because every name is left as often as it is entered.
std::vector<std::string> circuit_of_every_pair(const std::vector<std::string>& names) {
  const std::size_t n = names.size();
  std::vector<std::size_t> next_exit(n, 0);  // the exits of each name taken so far, in order
  std::vector<std::size_t> stack = {0};
  std::vector<std::string> walk;
  while (!stack.empty()) {
    const std::size_t at = stack.back();
    if (next_exit[at] < n) {
      stack.push_back(next_exit[at]++);
    } else {
      walk.push_back(names[at]);
      stack.pop_back();
    }
  }
  return {walk.rbegin(), walk.rend()};
}

// The program runs under the walk's first policy for three iterations (the
// program recorded in the second, so that a planner has one to follow),
// then under each next policy of the walk for two: the first of them its
// start, the second its steady state. At each switch nothing moves, no copy
// is left in flight, and every byte is checked. A plan gets a tenth of a
// second: the bytes must be right whatever the plan.
void check_walk(const std::vector<std::string>& walk, std::uint64_t fast_bytes) {
  constexpr double plan_seconds = 0.1;
  REQUIRE(walk.size() > 1);
  ca::Runtime rt(test::two_tiers(fast_bytes, 3 * test::SwitchedProgram::footprint),
                 test::policy_with_quick_plans(walk.front(), plan_seconds));
  test::SwitchedProgram program(rt);
  program.iteration();
  rt.record_program();
  program.iteration();
  program.iteration();
  for (std::size_t step = 1; step < walk.size(); ++step) {
    const std::string& from = walk[step - 1];
    const std::string& to = walk[step];
    CAPTURE(step);
    CAPTURE(from);
    CAPTURE(to);
    program.check_weights();
    // The old policy's pending moves end here, so that what the switch
    // itself does is seen alone.
    settle(rt);
    const auto before = placement(rt);
    std::unique_ptr<ca::policy::Policy> next = test::policy_with_quick_plans(to, plan_seconds);
    const std::string next_name = next->name();
    const ca::policy::HandOver done = rt.switch_policy(std::move(next));
    CHECK(rt.policy_name() == next_name);
    CHECK(done.objects == before.size());
    CHECK(done.retired_freed == 0);
    CHECK(placement(rt) == before);  // nothing moved for the switch itself
    CHECK(nothing_in_flight(rt));
    rt.manager().check_invariants(/*verify_contents=*/true);
    program.check_weights();
    for (int i = 0; i < 2; ++i) program.iteration();
  }
  program.check_weights();
  rt.collect();
  rt.manager().check_invariants(/*verify_contents=*/true);
  CHECK(rt.stats().async.failures == 0);
}

// A policy that places as first-touch does and never frees a retired
// object (a user's policy may hold retires for reasons of its own).
class HoldsRetires final : public ca::policy::Policy {
 public:
  [[nodiscard]] std::string name() const override { return "holds-retires"; }
  [[nodiscard]] bool place(ca::Object& object) override {
    for (ca::DeviceId d = 0; d < manager().device_count(); ++d) {
      if (ca::Region* r = manager().allocate(d, object.bytes())) {
        manager().setprimary(object, *r);
        return true;
      }
    }
    return false;
  }
  void retire(ca::Object& object) override { held_.push_back(&object); }

 private:
  std::vector<ca::Object*> held_;
};

// A policy whose adopt fails on the third object it is handed.
class FailsToAdopt final : public ca::policy::Policy {
 public:
  [[nodiscard]] std::string name() const override { return "fails-to-adopt"; }
  [[nodiscard]] bool place(ca::Object& /*object*/) override { return false; }
  void adopt(ca::Object& object) override {
    object.set_policy_state(std::make_unique<ca::PolicyState>());
    if (++adopted_ == 3) throw std::runtime_error("fails-to-adopt: no room for its state");
  }

 private:
  int adopted_ = 0;
};

}  // namespace

TEST_CASE(
    "policy switch: every ordered pair of built-in policies, switched between iterations, keeps every byte "
    "where it lies") {
  const std::vector<std::string> names = ca::policy::Registry::builtin().names();
  REQUIRE(names.size() > 10);
  // all-fast needs the whole footprint in fast memory: its pairs run in a
  // fast tier that holds it, out and back to each policy; every other pair
  // in one walk, in a fast tier of a third of it, where every caching
  // policy moves.
  std::vector<std::string> others;
  std::vector<std::string> star;
  for (const std::string& name : names) {
    if (name == "all-fast") continue;
    others.push_back(name);
  }
  for (const std::string& name : names) {
    star.push_back("all-fast");
    star.push_back(name);
  }
  star.push_back("all-fast");
  const std::vector<std::string> walk = circuit_of_every_pair(others);
  std::set<std::pair<std::string, std::string>> pairs;
  for (std::size_t i = 1; i < walk.size(); ++i) pairs.emplace(walk[i - 1], walk[i]);
  for (std::size_t i = 1; i < star.size(); ++i) pairs.emplace(star[i - 1], star[i]);
  CHECK(walk.size() == others.size() * others.size() + 1);  // each pair once
  CHECK(pairs.size() == names.size() * names.size());       // and every pair
  check_walk(walk, test::SwitchedProgram::footprint / 3);
  check_walk(star, 2 * test::SwitchedProgram::footprint);
}

TEST_CASE("policy switch: a pinned array stays pinned where it is, and its scope reads and writes on") {
  ca::Runtime rt(test::two_tiers(64 * test::KiB, 1 << 20), ca::policy::Registry::builtin().make("ca-lmp"));
  auto pinned = rt.array<std::byte>(16 * test::KiB);
  auto other = rt.array<std::byte>(16 * test::KiB);
  test::fill(other, 2);
  {
    auto w = pinned.write();
    test::fill(w.data(), w.size(), 1);
    const std::byte* before = w.data();
    const auto where = placement(rt);
    (void)rt.switch_policy(ca::policy::Registry::builtin().make("all-slow"));
    CHECK(placement(rt) == where);
    CHECK(w.data() == before);
    test::fill(w.data(), w.size(), 3);  // the scope still writes its object's primary
  }
  CHECK(test::holds(pinned, 3));
  CHECK(test::holds(other, 2));
  rt.manager().check_invariants(/*verify_contents=*/true);
}

TEST_CASE("policy switch: a null policy is refused, and a policy that fails to adopt leaves first-touch in charge") {
  ca::Runtime rt(test::two_tiers(64 * test::KiB, 1 << 20), ca::policy::Registry::builtin().make("ca-lm"));
  std::vector<ca::CachedArray<std::byte>> arrays;
  for (std::uint64_t i = 0; i < 6; ++i) {
    arrays.push_back(rt.array<std::byte>(20 * test::KiB));
    test::fill(arrays.back(), i);
  }
  test::check_contains(test::invalid_argument_of([&] { (void)rt.switch_policy(nullptr); }),
                       "switch_policy needs a policy");
  CHECK(rt.policy_name() == "ca-lm");
  const auto where = placement(rt);
  CHECK_THROWS_WITH_AS((void)rt.switch_policy(std::make_unique<FailsToAdopt>()),
                       "fails-to-adopt: no room for its state", std::runtime_error);
  CHECK(rt.policy_name() == "first-touch");
  CHECK(placement(rt) == where);
  {
    auto guard = rt.lock();
    rt.manager().for_each_object([](const ca::Object& o) { CHECK(o.policy_state<ca::PolicyState>() == nullptr); });
  }
  for (std::uint64_t i = 0; i < arrays.size(); ++i) CHECK(test::holds(arrays[i], i));
  // The runtime goes on: a new array, and a working switch after.
  auto more = rt.array<std::byte>(4 * test::KiB);
  test::fill(more, 99);
  (void)rt.switch_policy(ca::policy::Registry::builtin().make("ca-lmp"));
  CHECK(test::holds(more, 99));
  rt.manager().check_invariants(/*verify_contents=*/true);
}

TEST_CASE("policy switch: retires the old policy still holds are freed, and nothing else") {
  ca::Runtime rt(test::two_tiers(64 * test::KiB, 1 << 20), std::make_unique<HoldsRetires>());
  auto kept = rt.array<std::byte>(8 * test::KiB);
  test::fill(kept, 7);
  for (int i = 0; i < 3; ++i) {
    auto dead = rt.array<std::byte>(8 * test::KiB);
    dead.retire();
  }
  const auto live = [&] {
    const ca::Stats stats = rt.stats();
    return stats.objects_created - stats.objects_destroyed;
  };
  CHECK(live() == 4);
  const ca::policy::HandOver done = rt.switch_policy(ca::policy::Registry::builtin().make("ca-lm"));
  CHECK(done.retired_freed == 3);
  CHECK(done.objects == 1);
  CHECK(live() == 1);
  CHECK(test::holds(kept, 7));
}

TEST_CASE("policy switch: reader threads read on across switches, every byte intact") {
  // The readers' kernels skip the lock under the policies that let them and
  // take it under the others; the switches change which, while they read.
  ca::Runtime rt(test::two_tiers(96 * test::KiB, 2 << 20), ca::policy::Registry::builtin().make("ca-lm"));
  constexpr int readers = 2;
  auto shared = rt.array<std::byte>(16 * test::KiB);
  test::fill(shared, 100);
  std::vector<ca::CachedArray<std::byte>> own;
  for (int t = 0; t < readers; ++t) {
    own.push_back(rt.array<std::byte>(16 * test::KiB));
    test::fill(own.back(), static_cast<std::uint64_t>(t));
  }
  auto written = rt.array<std::byte>(32 * test::KiB);
  std::atomic<bool> stop{false};
  std::atomic<int> bad_reads{0};
  std::atomic<std::uint64_t> reads{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < readers; ++t) {
    threads.emplace_back([&, t] {
      while (!stop.load(std::memory_order_relaxed)) {
        rt.kernel("read", ca::reads(own[static_cast<std::size_t>(t)], shared),
                  [&](std::span<const std::byte> mine, std::span<const std::byte> common) {
                    if (!test::holds(mine.data(), mine.size(), static_cast<std::uint64_t>(t)) ||
                        !test::holds(common.data(), common.size(), 100)) {
                      bad_reads.fetch_add(1);
                    }
                  });
        reads.fetch_add(1, std::memory_order_relaxed);
      }
    });
  }
  // Each switch waits until the readers have read since the last one, so
  // that every switch overlaps their reads.
  const auto await_reads_after = [&](std::uint64_t seen) {
    while (reads.load(std::memory_order_relaxed) < seen + readers) std::this_thread::yield();
    return reads.load(std::memory_order_relaxed);
  };
  std::uint64_t seen = await_reads_after(0);
  const std::vector<std::string> cycle = {"first-touch", "ca-lmp", "all-slow", "ca-lma", "hw-cache", "ca-lm"};
  for (std::uint64_t round = 0; round < 4 * cycle.size(); ++round) {
    seen = await_reads_after(seen);
    rt.begin_iteration();
    test::fill(written, round);
    (void)rt.switch_policy(ca::policy::Registry::builtin().make(cycle[round % cycle.size()]));
    CHECK(test::holds(written, round));
  }
  stop = true;
  for (std::thread& thread : threads) thread.join();
  CHECK(bad_reads.load() == 0);
  rt.manager().check_invariants(/*verify_contents=*/true);
}
