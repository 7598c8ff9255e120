// The AutoTM policies (policy/autotm_policy.hpp) executing their plan: in a
// steady iteration every kernel's arguments are on the tier the plan says,
// DRAM holds no more than the limit, the static plan copies nothing, the
// asynchronous one copies on the mover, a departure from the program is
// warned about once and falls back to CA:LM without losing a byte, a
// planner that cannot plan says why, and a move in whose DRAM a landing
// write-back holds, or that finds no hole, is put off to a later kernel,
// not waited for or left to its use.
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "cachedarrays/policy/autotm_policy.hpp"
#include "cachedarrays/policy/registry.hpp"
#include "test_kernel_models.hpp"
#include "test_support.hpp"
#include "wall_clock.hpp"

namespace ca = cachedarrays;
using ca::plan::AutotmFormulation;

namespace {

using test::device_of, test::fill, test::holds, test::KiB;
constexpr std::uint64_t object_bytes = 256 * KiB;

using test::MillisecondPerSlowArgument;

struct Setup {
  std::unique_ptr<ca::Runtime> rt;
  ca::policy::AutotmPolicy* policy = nullptr;
  std::vector<std::string> log;
};

// A runtime of 1 MiB fast memory under an AutoTM policy with a DRAM limit of
// `dram_limit` (600 KiB: two of the 256 KiB objects), copies at `copy_gbps`.
std::unique_ptr<Setup> autotm_runtime(AutotmFormulation formulation, double copy_gbps, double kernel_base_seconds,
                                      std::uint64_t dram_limit = 600 * KiB) {
  auto setup = std::make_unique<Setup>();
  ca::policy::AutotmPolicyOptions options;
  options.solver.formulation = formulation;
  options.time_model = std::make_shared<MillisecondPerSlowArgument>(kernel_base_seconds);
  options.fast_tier = {100, 100};
  options.slow_tier = {copy_gbps, copy_gbps};
  options.dram_limit = dram_limit;
  options.log = [s = setup.get()](const std::string& line) { s->log.push_back(line); };
  auto policy = std::make_unique<ca::policy::AutotmPolicy>(std::move(options));
  setup->policy = policy.get();
  setup->rt = std::make_unique<ca::Runtime>(test::two_tiers(1 << 20, 8 << 20), std::move(policy));
  return setup;
}

// One iteration: kernels 0..3 use (A, B), (C, D), (A, B), (C, D); each
// reads its first argument and writes its second. `seen` receives, per
// kernel and argument, whether it was in fast memory while the kernel ran,
// and the fast tier's bytes in use then.
struct Seen {
  std::vector<std::vector<bool>> in_fast;
  std::vector<std::uint64_t> fast_bytes;
};

void four_kernel_iteration(ca::Runtime& rt, std::vector<ca::CachedArray<std::byte>>& a, Seen* seen = nullptr) {
  rt.begin_iteration();
  const int pairs[4][2] = {{0, 1}, {2, 3}, {0, 1}, {2, 3}};
  for (const auto& pair : pairs) {
    ca::CachedArray<std::byte>& in = a[static_cast<std::size_t>(pair[0])];
    ca::CachedArray<std::byte>& out = a[static_cast<std::size_t>(pair[1])];
    rt.kernel(ca::reads(in), ca::writes(out), [&](std::span<const std::byte> x, std::span<std::byte> y) {
      // y is pinned for writing (dirty) and keeps its contents.
      (void)x;
      (void)y;
      if (seen == nullptr) return;
      auto guard = rt.lock();
      const ca::DataManager& dm = rt.manager();
      seen->in_fast.push_back(
          {dm.device(*dm.getprimary(in.object())) == 0, dm.device(*dm.getprimary(out.object())) == 0});
      seen->fast_bytes.push_back(dm.usage(0).bytes_used);
    });
  }
}

std::vector<ca::CachedArray<std::byte>> four_arrays(ca::Runtime& rt) {
  std::vector<ca::CachedArray<std::byte>> a;
  for (std::uint64_t i = 0; i < 4; ++i) {
    a.push_back(rt.array<std::byte>(object_bytes));
    fill(a.back(), i);
  }
  return a;
}

// Runs iterations until the program is recorded and followed, then one
// more with `seen`; returns the stats of that one.
ca::Stats steady_iteration(Setup& s, std::vector<ca::CachedArray<std::byte>>& a, Seen& seen) {
  s.rt->record_program();
  for (int i = 0; i < 3; ++i) four_kernel_iteration(*s.rt, a);  // 1 recorded; 2 and 3 follow the plan
  const ca::Stats before = s.rt->stats();
  four_kernel_iteration(*s.rt, a, &seen);
  s.rt->collect();
  s.rt->manager().finish_copies();
  return s.rt->stats().since(before);
}

}  // namespace

TEST_CASE("autotm policy: the registry makes the three formulations") {
  const auto registry = ca::policy::Registry::builtin();
  CHECK(registry.make("autotm-static")->name() == "autotm-static");
  CHECK(registry.make("autotm-sync")->name() == "autotm-sync");
  CHECK(registry.make("autotm-async")->name() == "autotm-async");
}

TEST_CASE("autotm policy: in a steady iteration the arguments are where the synchronous plan says, within the limit") {
  auto s = autotm_runtime(AutotmFormulation::synchronous, 10, 0);
  auto a = four_arrays(*s->rt);
  Seen seen;
  const ca::Stats delta = steady_iteration(*s, a, seen);
  const ca::plan::MovePlan* plan = s->policy->plan();
  REQUIRE(plan != nullptr);
  // A move costs 26 us, a kernel argument in PMM 1 ms: every argument is
  // brought in, two objects at a time (the limit), and the others leave.
  REQUIRE(seen.in_fast.size() == 4);
  for (std::size_t k = 0; k < 4; ++k) {
    CAPTURE(k);
    CHECK(plan->in_fast[k] == std::vector<bool>{true, true});
    CHECK(seen.in_fast[k] == plan->in_fast[k]);
    CHECK(seen.fast_bytes[k] <= 600 * KiB);
  }
  CHECK(delta.bytes_copied[1][0] > 0);  // the moves in were made
  CHECK(s->policy->counters().departures == 0);
  CHECK(s->policy->counters().iterations_followed >= 2);
  for (std::uint64_t i = 0; i < 4; ++i) CHECK(holds(a[i], i));
  s->rt->manager().check_invariants(true);
  // The solve was reported.
  CHECK(std::any_of(s->log.begin(), s->log.end(),
                    [](const std::string& l) { return l.find("modeled") != std::string::npos; }));
}

TEST_CASE("autotm policy: the static plan places once and copies nothing in a steady iteration") {
  auto s = autotm_runtime(AutotmFormulation::static_placement, 10, 0);
  auto a = four_arrays(*s->rt);
  Seen seen;
  const ca::Stats delta = steady_iteration(*s, a, seen);
  const ca::plan::MovePlan* plan = s->policy->plan();
  REQUIRE(plan != nullptr);
  CHECK(plan->moves.empty());
  CHECK(delta.total_bytes_copied() == 0);
  REQUIRE(seen.in_fast.size() == 4);
  int in_fast = 0;
  for (std::size_t k = 0; k < 4; ++k) {
    CHECK(seen.in_fast[k] == plan->in_fast[k]);
    CHECK(seen.fast_bytes[k] <= 600 * KiB);
    in_fast += static_cast<int>(plan->in_fast[k][0]) + static_cast<int>(plan->in_fast[k][1]);
  }
  CHECK(in_fast == 4);  // two of the four objects, used twice each
  for (std::uint64_t i = 0; i < 4; ++i) CHECK(holds(a[i], i));
}

TEST_CASE("autotm policy: the asynchronous plan moves beside the kernels, on the mover") {
  // Kernels of 10 ms each using one object, A B C D A B C D; DRAM for three
  // of the four (800 KiB); a copy of 256 KiB at 0.1 GB/s takes 2.6 ms. The
  // next object comes in beside the kernel before its use and the last one
  // leaves beside the kernel after: every argument in DRAM, no copy on the
  // critical path (the plan's time is the kernels': 80 ms).
  auto s = autotm_runtime(AutotmFormulation::asynchronous, 0.1, 10e-3, 800 * KiB);
  auto a = four_arrays(*s->rt);
  const auto one_by_one = [&](std::vector<std::vector<bool>>* in_fast) {
    s->rt->begin_iteration();
    for (int k = 0; k < 8; ++k) {
      ca::CachedArray<std::byte>& x = a[static_cast<std::size_t>(k % 4)];
      s->rt->kernel(ca::writes(x), [&](std::span<std::byte>) {
        if (in_fast == nullptr) return;
        auto guard = s->rt->lock();
        const ca::DataManager& dm = s->rt->manager();
        in_fast->push_back({dm.device(*dm.getprimary(x.object())) == 0});
        CHECK(dm.usage(0).bytes_used <= 800 * KiB);
      });
    }
  };
  s->rt->record_program();
  for (int i = 0; i < 3; ++i) one_by_one(nullptr);
  const ca::Stats before = s->rt->stats();
  std::vector<std::vector<bool>> in_fast;
  one_by_one(&in_fast);
  s->rt->manager().finish_copies();
  const ca::Stats delta = s->rt->stats().since(before);
  const ca::plan::MovePlan* plan = s->policy->plan();
  REQUIRE(plan != nullptr);
  CHECK(plan->modeled_seconds == doctest::Approx(80e-3));
  // The summary sets the plan's own modeled time against all-DRAM's.
  CHECK(s->policy->plan_summary().find("own model 1.00x all-DRAM") != std::string::npos);
  const auto async_moves =
      std::count_if(plan->moves.begin(), plan->moves.end(), [](const ca::plan::TierMove& m) { return m.asynchronous; });
  CHECK(async_moves >= 8);
  CHECK(delta.async.copies > 0);
  CHECK(in_fast == plan->in_fast);
  CHECK(s->policy->counters().departures == 0);
  for (std::uint64_t i = 0; i < 4; ++i) CHECK(holds(a[i], i));
  s->rt->manager().check_invariants(true);
}

TEST_CASE(
    "autotm policy: an iteration that departs from the program falls back to CA:LM with one warning; one begun "
    "as unplanned (a test pass) is no departure") {
  auto s = autotm_runtime(AutotmFormulation::synchronous, 10, 0);
  auto a = four_arrays(*s->rt);
  auto other = s->rt->array<std::byte>(300 * KiB);
  fill(other, 9);
  Seen seen;
  (void)steady_iteration(*s, a, seen);
  REQUIRE(s->policy->counters().departures == 0);
  const std::size_t lines = s->log.size();
  bool unplanned = false;
  SUBCASE("begun as the program's") {}
  SUBCASE("begun as unplanned") { unplanned = true; }
  // Two iterations whose second kernel reads a larger object than the
  // program's.
  for (int i = 0; i < 2; ++i) {
    if (unplanned) {
      s->rt->begin_unplanned_iteration();
    } else {
      s->rt->begin_iteration();
    }
    s->rt->kernel(ca::reads(a[0]), ca::writes(a[1]), [](std::span<const std::byte>, std::span<std::byte>) {});
    s->rt->kernel(ca::reads(other), ca::writes(a[3]), [](std::span<const std::byte>, std::span<std::byte>) {});
    s->rt->kernel(ca::reads(a[2]), ca::writes(a[1]), [](std::span<const std::byte>, std::span<std::byte>) {});
  }
  if (unplanned) {
    // CA:LM placed them, and they are no departure: no count, no warning.
    CHECK(s->policy->counters().departures == 0);
    CHECK(s->policy->counters().unplanned_iterations == 2);
    CHECK(s->log.size() == lines);
  } else {
    // Departures, one warning naming the kernel.
    CHECK(s->policy->counters().departures == 2);
    CHECK(s->policy->counters().unplanned_iterations == 0);
    const auto warnings = std::count_if(s->log.begin(), s->log.end(), [](const std::string& l) {
      return l.find("warning") != std::string::npos && l.find("departed") != std::string::npos &&
             l.find("kernel 1") != std::string::npos;
    });
    CHECK(warnings == 1);
  }
  // The plan is followed again when the program is.
  const auto departures = s->policy->counters().departures;
  const auto followed = s->policy->counters().iterations_followed;
  four_kernel_iteration(*s->rt, a);
  four_kernel_iteration(*s->rt, a);
  CHECK(s->policy->counters().iterations_followed == followed + 1);  // the one before the last
  CHECK(s->policy->counters().departures == departures);
  for (std::uint64_t i = 0; i < 4; ++i) CHECK(holds(a[i], i));
  CHECK(holds(other, 9));
  s->rt->manager().check_invariants(true);
}

TEST_CASE("autotm policy: without a program it is CA:LM, and a planner that cannot plan says why") {
  auto s = autotm_runtime(AutotmFormulation::synchronous, 10, 0);
  auto a = four_arrays(*s->rt);
  four_kernel_iteration(*s->rt, a);
  CHECK(s->policy->plan() == nullptr);
  CHECK(device_of(*s->rt, a[3]) == 0);  // CA:LM: local allocation and moves on write
  for (std::uint64_t i = 0; i < 4; ++i) CHECK(holds(a[i], i));
  s->rt->record_program();
  four_kernel_iteration(*s->rt, a);
  four_kernel_iteration(*s->rt, a);
  REQUIRE(s->rt->program() != nullptr);
  CHECK(s->policy->plan() != nullptr);

  ca::policy::AutotmPolicyOptions options;
  options.solver.time_limit_seconds = 0;
  options.log = [](const std::string&) {};
  ca::Runtime rt(test::two_tiers(1 << 20, 8 << 20), std::make_unique<ca::policy::AutotmPolicy>(std::move(options)));
  CHECK_THROWS_WITH_AS(rt.set_program(*s->rt->program()), doctest::Contains("time_limit_seconds"),
                       ca::invalid_argument);
}

namespace {

// Holds the mover's copies while armed, until released or a valve passes, so
// that an executor that waits for a held copy cannot hang the test: it is
// counted, and the assertions say what it did. A test that expects such a
// wait opens the valve after 2 s; one that expects none gives the valve a
// hang guard's time (wall_clock.hpp), so that a slow or loaded machine,
// taking longer than that to reach its release, does not open it.
class HeldMover {
 public:
  explicit HeldMover(double valve_seconds = 2.0) : valve_(valve_seconds) {}
  ca::MoverOptions options() {
    ca::MoverOptions o;
    o.threads = 1;
    o.before_copy = [this](std::uint64_t) {
      std::unique_lock lock(mutex_);
      if (!armed_ || released_) return;
      if (!released_cv_.wait_for(lock, valve_, [&] { return released_; })) ++valves_;
    };
    return o;
  }
  void arm() {
    std::lock_guard guard(mutex_);
    armed_ = true;
  }
  void release() {
    {
      std::lock_guard guard(mutex_);
      released_ = true;
    }
    released_cv_.notify_all();
  }
  int valves() {
    std::lock_guard guard(mutex_);
    return valves_;
  }

 private:
  std::chrono::duration<double> valve_;
  std::mutex mutex_;
  std::condition_variable released_cv_;
  bool armed_ = false, released_ = false;
  int valves_ = 0;
};

// AutoTM's executor following a plan of our own (`planner`), with a DRAM
// limit of 600 KiB (two of the 256 KiB objects).
ca::policy::AutotmPolicyOptions hand_planned(ca::policy::PlannerHook planner) {
  ca::policy::AutotmPolicyOptions options;
  options.time_model = std::make_shared<MillisecondPerSlowArgument>(1e-3);
  options.fast_tier = {100, 100};
  options.slow_tier = {10, 10};
  options.dram_limit = 600 * KiB;
  options.log = [](const std::string&) {};
  options.planner = std::move(planner);
  return options;
}

// A runtime of 1 MiB fast memory, copies on `mover`, under AutoTM's
// executor with a DRAM limit of 600 KiB (two of the 256 KiB objects) and a
// plan of our own: every argument in DRAM, and the first kernel's first
// argument moved out beside the second kernel, asynchronously.
struct OutBesideK1 {
  explicit OutBesideK1(HeldMover& mover) : rt(make(mover, policy)) {
    fill(a, 1);
    fill(b, 2);
  }
  static std::unique_ptr<ca::Runtime> make(HeldMover& mover, ca::policy::AutotmPolicy*& policy) {
    ca::policy::AutotmPolicyOptions options = hand_planned(
        ca::policy::PlannerHook{"a-out-beside-k1", "A moved out beside k1", [](const ca::policy::PlanRequest& request) {
                                  ca::plan::MovePlan plan;
                                  for (const ca::plan::ProgramKernel& k : request.program.kernels()) {
                                    plan.in_fast.emplace_back(k.args.size(), true);
                                  }
                                  const std::uint32_t object_a = request.program.kernels().at(0).args.at(0).object;
                                  plan.moves.push_back({object_a, 1, /*to_fast=*/false, /*asynchronous=*/true});
                                  plan.status = "by hand";
                                  return plan;
                                }});
    auto owned = std::make_unique<ca::policy::AutotmPolicy>(std::move(options));
    policy = owned.get();
    return std::make_unique<ca::Runtime>(test::two_tiers(1 << 20, 8 << 20), std::move(owned), mover.options());
  }
  ca::policy::AutotmPolicy* policy = nullptr;
  std::unique_ptr<ca::Runtime> rt;
  // A and B, 256 KiB each, holding patterns 1 and 2.
  ca::CachedArray<std::byte> a = rt->array<std::byte>(object_bytes);
  ca::CachedArray<std::byte> b = rt->array<std::byte>(object_bytes);
};

}  // namespace

TEST_CASE("autotm policy: an asynchronous move out keeps its DRAM until its write-back lands or the room is needed") {
  // A and B (256 KiB each) live across iterations; kernels k0 writes A,
  // k1 and k2 write B, then C (256 KiB) is created and k3 writes C. DRAM
  // limit 600 KiB: A and B, or B and C. The plan (a planner of our own)
  // keeps everything in DRAM and moves A out beside k1, asynchronously.
  HeldMover mover;
  OutBesideK1 s(mover);
  ca::Runtime& rt = *s.rt;
  ca::policy::AutotmPolicy& policy = *s.policy;
  ca::CachedArray<std::byte>& a = s.a;
  ca::CachedArray<std::byte>& b = s.b;
  struct During {
    bool a_in_fast = false, a_written_back_in_flight = false, c_in_fast = false;
    std::uint64_t fast_bytes = 0;
  };
  const auto run = [&](bool check, During* during) {
    rt.begin_iteration();
    rt.kernel(ca::writes(a), [&](std::span<std::byte>) {
      if (check) mover.arm();  // the next copy is A's write-back, beside k1
    });
    rt.kernel(ca::writes(b), [](std::span<std::byte>) {});
    rt.kernel(ca::writes(b), [&](std::span<std::byte>) {
      if (!check) return;
      auto guard = rt.lock();
      ca::DataManager& dm = rt.manager();
      ca::Region& primary = *dm.getprimary(a.object());
      during->a_in_fast = dm.device(primary) == 0;
      during->a_written_back_in_flight = dm.in_flight(primary);
    });
    auto c = rt.array<std::byte>(object_bytes);
    rt.kernel(ca::writes(c), [&](std::span<std::byte> y) {
      std::fill(y.begin(), y.end(), std::byte{7});
      if (!check) return;
      auto guard = rt.lock();
      const ca::DataManager& dm = rt.manager();
      during->c_in_fast = dm.device(*dm.getprimary(c.object())) == 0;
      during->fast_bytes = dm.usage(0).bytes_used;
    });
  };
  rt.record_program();
  for (int i = 0; i < 3; ++i) run(false, nullptr);  // recorded, then followed
  REQUIRE(policy.plan() != nullptr);
  const std::uint64_t departures = policy.counters().departures;  // the first iteration's, if any
  During during;
  run(true, &during);
  const bool followed = policy.counters().departures == departures;
  mover.release();
  rt.manager().finish_copies();
  // k2 began without waiting for A's write-back: A still held its DRAM
  // there, its copy on the mover.
  CHECK(during.a_in_fast);
  CHECK(during.a_written_back_in_flight);
  // C's creation needed A's room (B and C are the limit): the executor
  // waited for the held write-back (the valve let it go) rather than pass
  // the limit, and C went to DRAM.
  CHECK(mover.valves() == 1);
  CHECK(during.c_in_fast);
  CHECK(during.fast_bytes <= 600 * KiB);
  CHECK(device_of(rt, a) == 1);
  CHECK(holds(a, 1));
  CHECK(holds(b, 2));
  CHECK(followed);  // the iteration followed the plan
  rt.manager().check_invariants(true);
}

TEST_CASE("autotm policy: a move out still landing is given up when the plan wants the object in DRAM again") {
  // A and B (256 KiB each) live across iterations: k0 writes A, k1 and k2
  // write B, k3 reads A, k4 writes B. The plan keeps everything in DRAM and
  // moves A out beside k1 (a plan of our own: A is wanted again at k3).
  // Held on the mover, A's write-back is still landing at k3's hint; it
  // lands during k3. A planned in DRAM from k3 on must not be taken out
  // after it.
  HeldMover mover(test::generous_seconds(2.0));
  OutBesideK1 s(mover);
  ca::Runtime& rt = *s.rt;
  ca::policy::AutotmPolicy& policy = *s.policy;
  ca::CachedArray<std::byte>& a = s.a;
  ca::CachedArray<std::byte>& b = s.b;
  bool a_in_fast_at_k3 = false, a_in_fast_at_k4 = false;
  const auto run = [&](bool check) {
    rt.begin_iteration();
    rt.kernel(ca::writes(a), [&](std::span<std::byte>) {
      if (check) mover.arm();
    });
    rt.kernel(ca::writes(b), [](std::span<std::byte>) {});
    rt.kernel(ca::writes(b), [](std::span<std::byte>) {});
    rt.kernel(ca::reads(a), [&](std::span<const std::byte>) {
      if (!check) return;
      mover.release();
      auto guard = rt.lock();
      ca::DataManager& dm = rt.manager();
      ca::Region& primary = *dm.getprimary(a.object());
      a_in_fast_at_k3 = dm.device(primary) == 0;
      dm.wait_for_copy(primary);  // A's write-back has landed
    });
    rt.kernel(ca::writes(b), [&](std::span<std::byte>) {
      if (!check) return;
      auto guard = rt.lock();
      const ca::DataManager& dm = rt.manager();
      a_in_fast_at_k4 = dm.device(*dm.getprimary(a.object())) == 0;
    });
  };
  rt.record_program();
  for (int i = 0; i < 3; ++i) run(false);
  REQUIRE(policy.plan() != nullptr);
  const std::uint64_t departures = policy.counters().departures;
  run(true);
  const bool followed = policy.counters().departures == departures;
  rt.manager().finish_copies();
  CHECK(followed);
  CHECK(a_in_fast_at_k3);
  CHECK(a_in_fast_at_k4);  // the landed write-back did not take A out after k3's use
  CHECK(mover.valves() == 0);
  CHECK(holds(a, 1));
  CHECK(holds(b, 2));
  rt.manager().check_invariants(true);
}

// A, B and C (256 KiB each, patterns 1, 2 and 3) live across iterations:
// k0 writes A, k1-k3 write B, k4 reads C, under AutoTM's executor with a
// plan of our own: every argument in DRAM, C moved in beside k2
// (asynchronously) and out after k4, and, when `a_out_beside_k1`, A moved
// out beside k1 (asynchronously). `at(k)` runs inside kernel k of the
// checked iteration, after it has recorded whether C, or a copy of it, is
// in DRAM during k2, k3 and k4.
struct CInBesideK2 {
  CInBesideK2(bool a_out_beside_k1, std::uint64_t dram_limit, ca::MoverOptions mover)
      : rt(make(a_out_beside_k1, dram_limit, std::move(mover), policy)) {
    fill(a, 1);
    fill(b, 2);
    fill(c, 3);
  }
  static std::unique_ptr<ca::Runtime> make(bool a_out, std::uint64_t dram_limit, ca::MoverOptions mover,
                                           ca::policy::AutotmPolicy*& policy) {
    ca::policy::AutotmPolicyOptions options = hand_planned(
        ca::policy::PlannerHook{"c-in-beside-k2", "C in beside k2", [a_out](const ca::policy::PlanRequest& request) {
                                  ca::plan::MovePlan plan;
                                  for (const ca::plan::ProgramKernel& k : request.program.kernels()) {
                                    plan.in_fast.emplace_back(k.args.size(), true);
                                  }
                                  const std::uint32_t object_a = request.program.kernels().at(0).args.at(0).object;
                                  const std::uint32_t object_c = request.program.kernels().at(4).args.at(0).object;
                                  if (a_out)
                                    plan.moves.push_back({object_a, 1, /*to_fast=*/false, /*asynchronous=*/true});
                                  plan.moves.push_back({object_c, 2, /*to_fast=*/true, /*asynchronous=*/true});
                                  plan.moves.push_back({object_c, 4, /*to_fast=*/false, /*asynchronous=*/false});
                                  plan.status = "by hand";
                                  return plan;
                                }});
    options.dram_limit = dram_limit;
    auto owned = std::make_unique<ca::policy::AutotmPolicy>(std::move(options));
    policy = owned.get();
    return std::make_unique<ca::Runtime>(test::two_tiers(1 << 20, 8 << 20), std::move(owned), std::move(mover));
  }
  bool c_copy_in_fast() {
    auto guard = rt->lock();
    ca::DataManager& dm = rt->manager();
    ca::Region& primary = *dm.getprimary(c.object());
    return dm.device(primary) == 0 || dm.getlinked(primary, 0) != nullptr;
  }
  void iteration(const std::function<void(int kernel)>& at) {
    const auto in = [&](int k) {
      if (!at) return;
      if (k >= 2) c_in_fast_at[k - 2] = c_copy_in_fast();
      at(k);
    };
    rt->begin_iteration();
    rt->kernel(ca::writes(a), [&](std::span<std::byte>) { in(0); });
    rt->kernel(ca::writes(b), [&](std::span<std::byte>) { in(1); });
    rt->kernel(ca::writes(b), [&](std::span<std::byte>) { in(2); });
    rt->kernel(ca::writes(b), [&](std::span<std::byte>) { in(3); });
    rt->kernel(ca::reads(c), [&](std::span<const std::byte>) { in(4); });
  }
  // Records the program, follows the plan for two iterations, then runs the
  // checked one; returns the executor's counters from before it.
  ca::policy::AutotmPolicy::Counters checked_iteration(const std::function<void(int kernel)>& at) {
    rt->record_program();
    for (int i = 0; i < 3; ++i) iteration(nullptr);
    REQUIRE(policy->plan() != nullptr);
    const ca::policy::AutotmPolicy::Counters before = policy->counters();
    iteration(at);
    rt->manager().finish_copies();
    return before;
  }
  ca::policy::AutotmPolicy* policy = nullptr;
  std::unique_ptr<ca::Runtime> rt;
  ca::CachedArray<std::byte> a = rt->array<std::byte>(object_bytes);
  ca::CachedArray<std::byte> b = rt->array<std::byte>(object_bytes);
  ca::CachedArray<std::byte> c = rt->array<std::byte>(object_bytes);
  std::array<bool, 3> c_in_fast_at{};  // at k2, k3, k4 of the checked iteration
};

TEST_CASE("autotm policy: a planned move in whose DRAM a landing write-back holds is put off, not waited for") {
  // DRAM limit 600 KiB: two of A, B and C. A's write-back, beside k1, is
  // held on the mover: at k2 the only room for C is A's, still landing.
  // The executor must not wait for it there (a wait would reach the held
  // mover's valve): C's copy is put off, then issued at k3, once A's
  // write-back has landed.
  HeldMover mover(test::generous_seconds(2.0));
  CInBesideK2 s(/*a_out_beside_k1=*/true, 600 * KiB, mover.options());
  bool a_landing_at_k2 = false;
  const ca::policy::AutotmPolicy::Counters before = s.checked_iteration([&](int k) {
    if (k == 0) mover.arm();  // the next copy is A's write-back, beside k1
    if (k != 2) return;
    {
      auto guard = s.rt->lock();
      ca::DataManager& dm = s.rt->manager();
      a_landing_at_k2 = dm.in_flight(*dm.getprimary(s.a.object()));
    }
    mover.release();
    auto guard = s.rt->lock();
    s.rt->manager().wait_for_copy(*s.rt->manager().getprimary(s.a.object()));  // A's write-back has landed
  });
  ca::policy::AutotmPolicy& policy = *s.policy;
  CHECK(policy.counters().departures == before.departures);  // the iteration followed the plan
  CHECK(mover.valves() == 0);                                // nothing waited for the held write-back
  CHECK(a_landing_at_k2);
  CHECK(!s.c_in_fast_at[0]);  // put off...
  CHECK(policy.counters().deferred_in == before.deferred_in + 1);
  CHECK(s.c_in_fast_at[1]);  // ...and issued at the next kernel, A's DRAM free
  CHECK(s.c_in_fast_at[2]);
  CHECK(holds(s.a, 1));
  CHECK(holds(s.b, 2));
  CHECK(holds(s.c, 3));
  s.rt->manager().check_invariants(true);
}

TEST_CASE("autotm policy: a planned move in that finds no hole is put off to a later kernel, not left to its use") {
  // The DRAM limit is the whole 1 MiB fast tier, and the plan keeps A and B
  // in DRAM. In the checked iteration, regions outside the plan fill the
  // tier during k1 and are freed during k2: at k2 there is no hole for C.
  // Its move is put off and issued at k3, where a hole is, rather than
  // dropped and made at k4's use on the compute thread.
  CInBesideK2 s(/*a_out_beside_k1=*/false, 1 << 20, {});
  std::vector<ca::Region*> fillers;
  std::size_t filled = 0;
  const ca::policy::AutotmPolicy::Counters before = s.checked_iteration([&](int k) {
    auto guard = s.rt->lock();
    ca::DataManager& dm = s.rt->manager();
    if (k == 1) {
      while (ca::Region* r = dm.allocate(0, 64 * KiB)) fillers.push_back(r);  // the tier is full
      filled = fillers.size();
    } else if (k == 2) {
      for (ca::Region* r : fillers) dm.free(*r);
      fillers.clear();
    }
  });
  ca::policy::AutotmPolicy& policy = *s.policy;
  CHECK(policy.counters().departures == before.departures);  // the iteration followed the plan
  CHECK(filled >= 8);                                        // A and B's 512 KiB left, and no more
  CHECK(!s.c_in_fast_at[0]);                                 // no hole: put off...
  CHECK(policy.counters().deferred_in == before.deferred_in + 1);
  CHECK(s.c_in_fast_at[1]);  // ...and issued at the next kernel, which has one
  CHECK(s.c_in_fast_at[2]);
  CHECK(holds(s.a, 1));
  CHECK(holds(s.b, 2));
  CHECK(holds(s.c, 3));
  s.rt->manager().check_invariants(true);
}
