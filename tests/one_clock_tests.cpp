// One clock for every planner and the executor (docs/design.md "What is
// known ahead"): a plan timed by its planner's own loop, or replayed by the
// executor that follows it, and the same plan timed on the shared
// CopyTimeline (plan/schedule/plan_timing.hpp) under that model's rules
// (MovePlanRules) give one time. ReDL's plans on random programs and
// AutoSwap's schedules on hand-made and random programs are each timed both
// ways, and ReDL's plans replayed too, and must agree to rounding; the same
// plans timed with another lane count, with their copies in another order,
// or under another model's rules, must not (so the comparison can fail).
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "autoswap_programs.hpp"
#include "cachedarrays/plan/schedule/autoswap.hpp"
#include "cachedarrays/plan/schedule/plan_timing.hpp"
#include "cachedarrays/plan/schedule/redl.hpp"
#include "cachedarrays/policy/registry.hpp"
#include "cachedarrays/sim/replay_judge.hpp"
#include "test_support.hpp"

namespace ca = cachedarrays;
using ca::plan::MovePlan;
using ca::plan::MovePlanRules;
using ca::plan::Program;
using ca::plan::TierCosts;
using test::autoswap::program_of;

namespace {

using test::MB;
using test::R, test::W;

doctest::Approx same_time(double seconds) { return doctest::Approx(seconds).epsilon(1e-9); }

constexpr MovePlanRules redl_rules = MovePlanRules::redl();
constexpr MovePlanRules autoswap_rules = MovePlanRules::autoswap();

// AutoSwap's schedule as moves (every argument in the fast tier during its
// kernel): at each kernel, the copies out in swap order, then the copies in
// by their next use, then swap order, as its engine issues them.
MovePlan autoswap_moves(const Program& p, const ca::plan::AutoswapPlan& plan) {
  const auto nk = static_cast<std::uint32_t>(p.kernels().size());
  MovePlan m;
  for (const auto& kernel : p.kernels()) m.in_fast.emplace_back(kernel.args.size(), true);
  for (std::uint32_t k = 0; k < nk; ++k) {
    for (const auto& s : plan.swaps) {
      if (s.candidate.out_kernel == k) m.moves.push_back({s.candidate.object, k, false, true});
    }
    std::vector<std::pair<std::uint32_t, std::size_t>> ins;  // (kernels to the use, swap)
    for (std::size_t i = 0; i < plan.swaps.size(); ++i) {
      const auto& s = plan.swaps[i];
      if (s.in_kernel == k) ins.emplace_back((s.candidate.before + nk - k) % nk, i);
    }
    std::sort(ins.begin(), ins.end());
    for (const auto& [distance, i] : ins) m.moves.push_back({plan.swaps[i].candidate.object, k, true, true});
  }
  return m;
}

}  // namespace

TEST_CASE("one clock: ReDL's estimate of its plan is the plan's time on the shared timeline") {
  test::Rng rng(64);
  int compared = 0, lanes_differ = 0, order_differs = 0;
  for (int i = 0; i < 200; ++i) {
    CAPTURE(i);
    // Drawn one at a time, kernels first: the order a call evaluates its
    // arguments in is the compiler's, and the programs must not depend on it.
    const std::size_t kernels = rng.between(3, 24);
    const std::size_t objects = rng.between(3, 12);
    const Program p = test::autoswap::random_program(rng, objects, kernels, 1);
    TierCosts c = test::autoswap::random_costs(rng, p);
    ca::plan::RedlOptions o;
    o.fast_limit = std::max<std::uint64_t>(1, p.max_live() * rng.between(10, 100) / 100);
    o.min_bytes = 0;
    o.alignment = 0;
    o.kernels_per_layer = static_cast<std::uint32_t>(rng.between(1, 3));
    const ca::plan::RedlPlan r = ca::plan::redl_plan(p, c, o);
    const MovePlan m = ca::plan::redl_autotm_plan(r);
    const ca::plan::MovePlanTime timed = ca::plan::time_move_plan(p, c, m, redl_rules);
    CHECK(timed.seconds == same_time(r.modeled_seconds));
    CHECK(timed.wait_seconds == same_time(r.wait_seconds));
    for (std::size_t k = 0; k < p.kernels().size(); ++k) CHECK(timed.kernel_start[k] == same_time(r.kernel_start[k]));
    ++compared;
    // Timed as if the mover had more lanes than the plan was made for.
    TierCosts wide = c;
    wide.copy_lanes = 4;
    if (ca::plan::time_move_plan(p, wide, m, redl_rules).seconds != same_time(r.modeled_seconds)) ++lanes_differ;
    // Timed with each kernel's copies issued in the reverse order.
    MovePlan reversed = m;
    for (std::size_t a = 0; a < reversed.moves.size();) {
      std::size_t b = a;
      while (b < reversed.moves.size() && reversed.moves[b].kernel == reversed.moves[a].kernel) ++b;
      std::reverse(reversed.moves.begin() + static_cast<std::ptrdiff_t>(a),
                   reversed.moves.begin() + static_cast<std::ptrdiff_t>(b));
      a = b;
    }
    if (ca::plan::time_move_plan(p, c, reversed, redl_rules).seconds != same_time(r.modeled_seconds)) ++order_differs;
  }
  CHECK(compared == 200);
  // Another machine or another order gives another time: the comparison
  // above tells plans apart.
  CHECK(lanes_differ > 0);
  CHECK(order_differs > 0);
}

TEST_CASE("one clock: AutoSwap's estimate of its schedule is the schedule's time on the shared timeline") {
  // Two objects of 1000 MB written by kernel 0 and read by kernel 5, and
  // one of 2000 MB between: copies of 1 s each on one engine, both copies
  // in issued at kernel 4, so kernel 5 waits 1 s.
  const Program p = program_of({{1000 * MB, false}, {1000 * MB, false}, {2000 * MB, false}},
                               {{{0, W}, {1, W}}, {}, {{2, W}}, {{2, R}}, {}, {{0, R}, {1, R}}});
  ca::plan::AutoswapOptions o;
  o.limit = 2000 * MB;
  TierCosts c = test::autoswap::costs_of(std::vector<double>(6, 1.0), 1.0, 1.0);
  for (const auto& kernel : p.kernels()) c.slow_penalty.emplace_back(kernel.args.size(), 0.0);
  const ca::plan::AutoswapPlan plan = ca::plan::autoswap_plan(p, c, o);
  REQUIRE(plan.swaps.size() == 2);
  const MovePlan m = autoswap_moves(p, plan);
  const double estimate = plan.iteration_seconds + plan.overhead_seconds;
  CHECK(estimate == same_time(7.0));
  CHECK(ca::plan::time_move_plan(p, c, m, autoswap_rules).seconds == same_time(estimate));
  CHECK(ca::plan::time_move_plan(p, c, m, autoswap_rules).wait_seconds == same_time(plan.overhead_seconds));
  // The copies in issued a kernel earlier (at kernel 3: A in 3-4 s, B in
  // 4-5 s) leave kernel 5 no wait: another plan, another time.
  MovePlan earlier = m;
  for (ca::plan::TierMove& move : earlier.moves) {
    if (move.to_fast) move.kernel = 3;
  }
  CHECK(ca::plan::time_move_plan(p, c, earlier, autoswap_rules).seconds == same_time(6.0));
  // ReDL's rules hold kernel 2 up until both copies out have landed: the
  // rules a plan is timed by are part of its time.
  CHECK(ca::plan::time_move_plan(p, c, m, redl_rules).seconds > estimate + 0.5);
}

TEST_CASE("one clock: on random programs AutoSwap's estimate is its schedule's time on the shared timeline") {
  // Every use writes its object, so that each copy out copies (the shared
  // model's copy out of an object whose slow copy is current is free,
  // which AutoSwap's engine, after the paper's GPU, does not model).
  test::Rng rng(2064);
  int compared = 0, waited = 0;
  for (int i = 0; i < 200; ++i) {
    CAPTURE(i);
    const std::size_t n = rng.between(3, 10), nk = rng.between(4, 20);
    std::vector<ca::plan::ProgramObject> objects;
    for (std::size_t obj = 0; obj < n; ++obj) objects.push_back({rng.between(1, 10) * 100, false});
    std::vector<std::vector<test::autoswap::Use>> uses(nk);
    for (std::size_t k = 0; k < nk; ++k) {
      const std::size_t args = rng.between(1, 3);
      for (std::size_t a = 0; a < args; ++a) {
        const auto obj = static_cast<std::uint32_t>(rng.below(n));
        bool seen = false;
        for (const auto& u : uses[k]) seen = seen || u.object == obj;
        if (!seen) uses[k].push_back({obj, W});
      }
    }
    const Program p = program_of(objects, uses);
    TierCosts c = test::autoswap::random_costs(rng, p);
    ca::plan::AutoswapOptions o;
    o.min_bytes = 0;
    o.across_peak_only = false;
    o.limit = std::max<std::uint64_t>(1, p.max_live() * rng.between(40, 100) / 100);
    const ca::plan::AutoswapPlan plan = ca::plan::autoswap_plan(p, c, o);
    if (plan.swaps.empty()) continue;
    const ca::plan::MovePlanTime timed = ca::plan::time_move_plan(p, c, autoswap_moves(p, plan), autoswap_rules);
    CHECK(timed.seconds == same_time(plan.iteration_seconds + plan.overhead_seconds));
    ++compared;
    if (plan.overhead_seconds > 0) ++waited;
  }
  CHECK(compared > 50);
  CHECK(waited > 10);  // plans whose kernels wait for copies, not only ones that hide them all
}

TEST_CASE("one clock: the executor's replay of a plan is its time under the executor's rules, and ReDL's estimate") {
  // ReDL's plans of random programs, on random tiers (the slow one no faster
  // than the fast one), each given to ReDL's model, to the shared timeline
  // under each model's rules, and to the replay of an AutotmPolicy that
  // follows it (sim/replay_judge.hpp) on a fast tier with room for every
  // move as it is issued.
  test::Rng rng(4064);
  int compared = 0, moved = 0, slow_use_waited = 0, written_back_behind = 0, rules_differ = 0;
  for (int i = 0; i < 120; ++i) {
    CAPTURE(i);
    const std::size_t kernels = rng.between(3, 24);
    const std::size_t objects = rng.between(3, 12);
    const Program p = test::autoswap::random_program(rng, objects, kernels, 1);
    ca::policy::AutotmPolicyOptions follower =
        ca::policy::Registry::builtin().describe("redl").planned_options().value();
    const double fast_read = static_cast<double>(rng.between(5, 50)) * 1e-7;
    const double fast_write = static_cast<double>(rng.between(5, 50)) * 1e-7;
    const double slow_read = fast_read * static_cast<double>(rng.between(1, 10)) / 10;
    const double slow_write = fast_write * static_cast<double>(rng.between(1, 10)) / 10;
    follower.fast_tier = {fast_read, fast_write};
    follower.slow_tier = {slow_read, slow_write};
    follower.time_model = nullptr;  // memory-bound, in the replay and in the costs alike
    follower.log = [](const std::string&) {};
    const auto lanes = static_cast<unsigned>(rng.between(1, 3));
    TierCosts c = TierCosts::from_model(p, ca::plan::MemoryBound{}, follower.fast_tier, follower.slow_tier);
    c.copy_lanes = lanes;
    ca::plan::RedlOptions o;
    o.fast_limit = std::max<std::uint64_t>(1, p.max_live() * rng.between(10, 100) / 100);
    o.min_bytes = 0;
    o.alignment = 0;
    const ca::plan::RedlPlan r = ca::plan::redl_plan(p, c, o);
    const MovePlan m = ca::plan::redl_autotm_plan(r);
    const ca::ReplayJudgeMachine machine = ca::ReplayJudgeMachine::as_planned(1 << 24, 1 << 25, follower, lanes);
    const double replayed = ca::replay_judge(std::make_shared<const ca::Trace>(p.to_trace(6)),
                                             std::make_shared<const Program>(p), machine, follower)(m);
    const double executor = ca::plan::time_move_plan(p, c, m, MovePlanRules::executor()).seconds;
    CHECK(replayed == same_time(executor));
    CHECK(ca::plan::time_move_plan(p, c, m, redl_rules).seconds == same_time(r.modeled_seconds));
    ++compared;
    if (!m.moves.empty()) ++moved;
    // Without either of the executor's own rules, or under ReDL's, some
    // plans take another time.
    MovePlanRules no_slow_wait = MovePlanRules::executor();
    no_slow_wait.slow_uses_wait = false;
    if (ca::plan::time_move_plan(p, c, m, no_slow_wait).seconds != same_time(replayed)) ++slow_use_waited;
    MovePlanRules in_order = MovePlanRules::executor();
    in_order.write_backs_in_background = false;
    if (ca::plan::time_move_plan(p, c, m, in_order).seconds != same_time(replayed)) ++written_back_behind;
    if (r.modeled_seconds != same_time(replayed)) ++rules_differ;
  }
  CHECK(compared == 120);
  CHECK(moved > 40);
  CHECK(slow_use_waited > 0);
  CHECK(written_back_behind > 0);
  CHECK(rules_differ > 0);
}
