// Offset-planned placement (policy/planned_placement.hpp, the ca-l*m*+planner
// modes): objects go to the offsets the planner gave them, so a fast tier of
// the planned footprint holds an iteration that the online allocator
// fragments; an iteration that departs from the plan is placed online and
// planned anew, and nothing stored is ever lost or changed.
#include <doctest/doctest.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "cachedarrays/plan/offsets/best_fit_offsets.hpp"
#include "cachedarrays/policy/cachedarrays_policy.hpp"
#include "test_support.hpp"

namespace ca = cachedarrays;

namespace {

using test::KiB;

// One iteration as a script: create object i with its size, or drop
// (retire) it. Every object is written with its own pattern when created
// and checked when dropped.
struct Step {
  bool create = true;
  std::size_t object = 0;
  std::uint64_t bytes = 0;
};
using Script = std::vector<Step>;

// The fragmenting iteration: A and B of 64 KiB, A dropped, C of 128 KiB.
// The online allocator puts A at 0 and B above it, so C finds two 64 KiB
// holes and needs 256 KiB in all (or a defrag); a plan puts B at the
// bottom and A and C, never alive together, above it: 192 KiB, max-live.
Script fragmenting() {
  return {{true, 0, 64 * KiB}, {true, 1, 64 * KiB}, {false, 0, 0}, {true, 2, 128 * KiB}, {false, 1, 0}, {false, 2, 0}};
}

// Its DSA problem, in the time of creations and retirements.
ca::plan::DsaProblem problem_of(const Script& script) {
  std::vector<ca::plan::DsaBuffer> buffers;
  std::vector<std::size_t> index;
  std::uint32_t clock = 0;
  for (const Step& s : script) {
    if (s.create) {
      if (index.size() <= s.object) index.resize(s.object + 1);
      index[s.object] = buffers.size();
      buffers.push_back({s.bytes, clock++, 0});
    } else {
      buffers[index[s.object]].end = clock++;
    }
  }
  return ca::plan::DsaProblem(std::move(buffers), 64);
}

ca::Runtime planned_runtime(std::uint64_t fast_bytes, const std::string& policy = "ca-lm+best-fit") {
  return ca::Runtime(test::two_tiers(fast_bytes, 8 << 20), ca::policy::Registry::builtin().make(policy));
}

const ca::policy::PlannedPlacement& placement_of(ca::Runtime& rt) {
  const auto& policy = dynamic_cast<const ca::policy::CachedArraysPolicy&>(rt.policy());
  REQUIRE(policy.planned_placement() != nullptr);
  return *policy.planned_placement();
}

// Runs one iteration of `script`; `offsets` receives each object's offset
// in fast memory when it was created (nullopt: placed elsewhere).
void run_iteration(ca::Runtime& rt, const Script& script, std::uint64_t seed,
                   std::vector<std::optional<std::uint64_t>>* offsets = nullptr, bool unplanned = false) {
  if (unplanned) {
    rt.begin_unplanned_iteration();
  } else {
    rt.begin_iteration();
  }
  std::vector<std::optional<ca::CachedArray<std::byte>>> live;
  for (const Step& s : script) {
    if (live.size() <= s.object) live.resize(s.object + 1);
    if (offsets != nullptr && offsets->size() <= s.object) offsets->resize(s.object + 1);
    if (s.create) {
      live[s.object].emplace(rt.array<std::byte>(s.bytes));
      rt.kernel(ca::writes(*live[s.object]),
                [&](std::span<std::byte> d) { test::fill(d.data(), d.size(), seed + s.object); });
      if (offsets != nullptr) {
        auto guard = rt.lock();
        const ca::Region* r = rt.manager().getprimary(live[s.object]->object());
        (*offsets)[s.object] = rt.manager().device(*r) == 0 ? std::optional(rt.manager().offset(*r)) : std::nullopt;
      }
    } else {
      rt.kernel(ca::reads(*live[s.object]),
                [&](std::span<const std::byte> d) { CHECK(test::holds(d.data(), d.size(), seed + s.object)); });
      live[s.object].reset();  // retire
    }
  }
  rt.collect();
}

}  // namespace

TEST_CASE("planned placement: objects at their planned offsets, in a fast tier of the planned footprint") {
  const Script script = fragmenting();
  const ca::plan::DsaProblem problem = problem_of(script);
  const ca::plan::OffsetPlan plan = ca::plan::best_fit_offsets(problem);
  REQUIRE(plan.footprint == problem.max_live());  // 192 KiB: the plan is the optimum
  REQUIRE(plan.footprint == 192 * KiB);

  // Without a program the first iteration is placed online and observed;
  // the second follows the plan made from it.
  ca::Runtime rt = planned_runtime(1 << 20);
  CHECK(rt.policy_name() == "ca-lm+best-fit");
  std::vector<std::optional<std::uint64_t>> offsets;
  run_iteration(rt, script, 1, &offsets);
  CHECK(offsets[2] == 128 * KiB);  // online: above A's 64 KiB hole and B
  CHECK_FALSE(placement_of(rt).active());
  for (int i = 0; i < 3; ++i) {
    offsets.clear();
    run_iteration(rt, script, 10 + static_cast<std::uint64_t>(i), &offsets);
    for (std::size_t k = 0; k < 3; ++k) {
      CAPTURE(k);
      CHECK(offsets[k] == plan.offsets[k]);  // base 0: nothing lives between iterations
    }
  }
  const ca::policy::PlannedPlacement& p = placement_of(rt);
  CHECK(p.active());
  CHECK(p.footprint() == plan.footprint);
  CHECK(p.counters().plans == 1);
  CHECK(p.counters().planned == 9);
  CHECK(p.counters().unplanned == 3);  // the first iteration's
  CHECK(p.counters().collisions == 0);
  rt.manager().check_invariants(true);

  // A fast tier of exactly the planned footprint, with the program given
  // ahead (recorded on another runtime): no iteration defragments or
  // evicts, while CA:LM without the plan must, in the same tier.
  ca::Runtime recorder = planned_runtime(1 << 20, "ca-lm");
  recorder.start_trace();
  run_iteration(recorder, script, 1);
  recorder.stop_trace();
  const ca::plan::Program program = ca::plan::Program::from_trace(*recorder.trace(), 1);
  for (const char* policy : {"ca-lm+best-fit", "ca-lm+smartpool", "ca-lm"}) {
    CAPTURE(policy);
    ca::Runtime tight = planned_runtime(plan.footprint, policy);
    tight.set_program(program);
    for (int i = 0; i < 3; ++i) run_iteration(tight, script, 20 + static_cast<std::uint64_t>(i));
    const ca::Stats s = tight.stats();
    const std::uint64_t moves = s.policy.defrags + s.policy.evictions;
    if (std::string(policy) == "ca-lm") {
      CHECK(moves > 0);
    } else {
      CHECK(moves == 0);
      CHECK(placement_of(tight).counters().planned == 9);
      CHECK(s.devices[0].peak_extent == plan.footprint);
    }
    tight.manager().check_invariants(true);
  }
}

TEST_CASE("planned placement: an iteration that departs from the plan is placed online and planned anew") {
  const Script script = fragmenting();
  // The same iteration with an object the plan does not know (D, first)
  // and C larger than planned.
  Script departing = {{true, 3, 4 * KiB}};
  for (Step s : script) {
    if (s.create && s.object == 2) s.bytes = 160 * KiB;
    departing.push_back(s);
  }
  departing.push_back({false, 3, 0});

  ca::Runtime rt = planned_runtime(1 << 20);
  run_iteration(rt, script, 1);
  run_iteration(rt, script, 2);  // planned from the first
  const ca::policy::PlannedPlacement::Counters before = placement_of(rt).counters();
  REQUIRE(before.plans == 1);
  REQUIRE(before.planned == 3);

  run_iteration(rt, departing, 3);  // contents are checked inside
  const ca::policy::PlannedPlacement::Counters during = placement_of(rt).counters();
  CHECK(during.unplanned - before.unplanned == 2);  // D, and C that is larger than its slot
  CHECK(during.planned - before.planned == 2);      // A and B still find theirs
  CHECK(during.plans == 1);                         // re-planned only when the next iteration begins

  run_iteration(rt, departing, 4);
  const ca::policy::PlannedPlacement::Counters after = placement_of(rt).counters();
  CHECK(after.plans == 2);
  CHECK(after.unplanned == during.unplanned);  // the new plan knows all four
  CHECK(after.planned - during.planned == 4);
  const ca::plan::OffsetPlan replanned = ca::plan::best_fit_offsets(problem_of(departing));
  CHECK(placement_of(rt).footprint() == replanned.footprint);
  rt.manager().check_invariants(true);
}

TEST_CASE("planned placement: an unplanned iteration (a test pass) is placed online and neither departs nor re-plans") {
  const Script script = fragmenting();
  // Other objects than the training iteration's: planned from, they would
  // replace its plan.
  const Script test_pass = {{true, 0, 8 * KiB}, {true, 1, 24 * KiB}, {false, 1, 0}, {false, 0, 0}};
  ca::Runtime rt = planned_runtime(1 << 20);
  run_iteration(rt, script, 1);
  run_iteration(rt, script, 2);  // planned from the first
  const ca::policy::PlannedPlacement::Counters before = placement_of(rt).counters();
  REQUIRE(before.plans == 1);
  const std::uint64_t footprint = placement_of(rt).footprint();

  run_iteration(rt, test_pass, 3, nullptr, true);  // contents are checked inside
  const ca::policy::PlannedPlacement::Counters during = placement_of(rt).counters();
  CHECK(during.planned == before.planned);  // nothing by the plan
  CHECK(during.collisions == before.collisions);

  std::vector<std::optional<std::uint64_t>> offsets;
  run_iteration(rt, script, 4, &offsets);
  const ca::policy::PlannedPlacement::Counters after = placement_of(rt).counters();
  CHECK(after.plans == 1);  // the test pass did not become the plan
  CHECK(after.planned - during.planned == 3);
  CHECK(placement_of(rt).footprint() == footprint);
  rt.manager().check_invariants(true);
}

TEST_CASE("planned placement: an object added once goes above the plan; added again, it joins the plan") {
  const Script script = fragmenting();
  // The iteration with one more object, made and dropped before the
  // others, as a first iteration that makes a buffer lazily, once.
  Script added = {{true, 3, 8 * KiB}, {false, 3, 0}};
  added.insert(added.end(), script.begin(), script.end());

  ca::Runtime rt = planned_runtime(1 << 20);
  run_iteration(rt, script, 1);
  run_iteration(rt, script, 2);  // planned from the first
  REQUIRE(placement_of(rt).counters().plans == 1);
  const std::uint64_t footprint = placement_of(rt).footprint();

  std::vector<std::optional<std::uint64_t>> offsets;
  run_iteration(rt, added, 3, &offsets);
  CHECK(offsets[3] >= footprint);  // above the plan: no later object's slot
  CHECK(placement_of(rt).counters().above == 1);
  CHECK(placement_of(rt).counters().planned == 6);  // A, B and C kept theirs

  run_iteration(rt, script, 4);  // the plan was kept: nothing to re-plan
  CHECK(placement_of(rt).counters().plans == 1);
  CHECK(placement_of(rt).counters().planned == 9);

  run_iteration(rt, added, 5);
  run_iteration(rt, added, 6);
  CHECK(placement_of(rt).counters().plans == 1);
  const std::uint64_t unplanned = placement_of(rt).counters().unplanned;
  run_iteration(rt, added, 7);  // the same addition twice in a row: planned with it
  CHECK(placement_of(rt).counters().plans == 2);
  CHECK(placement_of(rt).counters().unplanned == unplanned);
  CHECK(placement_of(rt).footprint() == ca::plan::best_fit_offsets(problem_of(added)).footprint);
  rt.manager().check_invariants(true);
}

TEST_CASE("planned placement: a taken slot sends its object above the plan, not into a later object's slot") {
  const Script script = fragmenting();
  ca::Runtime rt = planned_runtime(1 << 20);
  run_iteration(rt, script, 1);
  run_iteration(rt, script, 2);  // planned
  // A region the plan does not know of (as a policy's own buffer would be)
  // in B's slot at the bottom of the heap.
  ca::Region* squatter = nullptr;
  {
    auto guard = rt.lock();
    squatter = &rt.manager().allocate_at(0, 0, 16 * KiB);
  }
  std::vector<std::optional<std::uint64_t>> offsets;
  run_iteration(rt, script, 3, &offsets);  // contents are checked inside
  const ca::policy::PlannedPlacement::Counters c = placement_of(rt).counters();
  CHECK(c.collisions == 1);  // B alone: A and C have their slot above B's
  CHECK(c.above == 1);
  CHECK(c.unplanned == 3);                            // the first iteration's only
  CHECK(offsets[1] >= placement_of(rt).footprint());  // above the plan, not in A's or C's slot
  CHECK(offsets[0] == 64 * KiB);
  CHECK(offsets[2] == 64 * KiB);
  {
    auto guard = rt.lock();
    rt.manager().free(*squatter);
  }
  rt.manager().check_invariants(true);
}

TEST_CASE("planned placement: modes, names and errors") {
  using ca::policy::Mode;
  CHECK(Mode::parse("ca-lm+best-fit").offsets == ca::plan::OffsetPlanner::best_fit);
  CHECK(Mode::parse("ca-lmpa+smartpool").name() == "ca-lmpa+smartpool");
  CHECK(Mode::parse("ca-lm+mip").offsets == ca::plan::OffsetPlanner::mip);
  CHECK(Mode::parse("ca-lm+online").name() == "ca-lm");
  const auto registry = ca::policy::Registry::builtin();
  CHECK(registry.make("planned")->name() == "ca-lm+best-fit");
  CHECK(registry.make("planned-a")->name() == "ca-lma+best-fit");
  CHECK(registry.make("ca-lmp+smartpool")->name() == "ca-lmp+smartpool");
  // A plan needs L and M: the message says so and names modes that work.
  const std::string no_m = test::invalid_argument_of([&] { (void)registry.make("ca-l+best-fit"); });
  test::check_contains(no_m, "needs local allocation (L) and at-once retires (M)");
  test::check_contains(no_m, "ca-lm+best-fit");
  test::check_contains(test::invalid_argument_of([&] { (void)Mode::parse("ca+smartpool"); }), "ca-lma+smartpool");
  const std::string unknown = test::invalid_argument_of([&] { (void)Mode::parse("ca-lm+first-fit"); });
  test::check_contains(unknown, "'first-fit'");
  test::check_contains(unknown, "best-fit, smartpool, mip");
  test::check_contains(
      test::invalid_argument_of([&] { (void)ca::policy::PlannedPlacement(ca::plan::OffsetPlanner::online); }),
      "not 'online'");
  CHECK(ca::plan::parse_offset_planner("smartpool") == ca::plan::OffsetPlanner::smartpool);
  test::check_contains(test::invalid_argument_of([&] {
                         (void)ca::plan::plan_offsets(problem_of(fragmenting()), ca::plan::OffsetPlanner::online);
                       }),
                       "online allocator makes no offset plan");
}
