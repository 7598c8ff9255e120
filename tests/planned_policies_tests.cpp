// The policies that follow another planner's plan through AutoTM's executor
// (policy/autotm_policy.hpp PlannerHook; policy/autoswap_policy.hpp,
// policy/redl_policy.hpp, policy/registry.hpp planned_policies): every
// planned name gives options and a policy of that name, and no other name
// does; AutoSwap's swaps become two asynchronous moves each; fit_to_heap is
// AutoTM's fragmentation loop (§4.2) around any planner that counts bytes;
// a plan that is not of the program is refused, naming the policy; a copy
// made ahead that no use promoted (ReDL's DSMA) is dropped when the plan
// moves its object out; and autoswap:swdoa and redl run a small training-
// like program through a Runtime without losing a byte.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "autoswap_programs.hpp"
#include "cachedarrays/plan/schedule/autoswap.hpp"
#include "cachedarrays/plan/schedule/autotm.hpp"
#include "cachedarrays/policy/autoswap_policy.hpp"
#include "cachedarrays/policy/autotm_policy.hpp"
#include "cachedarrays/policy/redl_policy.hpp"
#include "cachedarrays/policy/registry.hpp"
#include "test_kernel_models.hpp"
#include "test_support.hpp"

namespace ca = cachedarrays;
using ca::plan::MovePlan;
using ca::plan::Program;
using ca::plan::StepKind;
using ca::plan::TierCosts;
using ca::plan::TierMove;

namespace {

using test::KiB, test::R, test::W;
constexpr std::uint64_t mib = 1024 * KiB;

using test::MillisecondPerSlowArgument;

// A program of persistent objects (numbered in order of first use, as
// Program requires) and kernels named "kernel", as Runtime::kernel names
// them, with no creations or retirements.
Program persistent_program(const std::vector<std::uint64_t>& bytes,
                           const std::vector<std::vector<ca::plan::ProgramArg>>& args) {
  std::vector<ca::plan::ProgramObject> objects;
  for (const std::uint64_t b : bytes) objects.push_back({b, true});
  std::vector<ca::plan::ProgramKernel> kernels;
  std::vector<ca::plan::ProgramStep> steps;
  for (std::size_t k = 0; k < args.size(); ++k) {
    kernels.push_back({"kernel", args[k]});
    steps.push_back({StepKind::kernel, static_cast<std::uint32_t>(k)});
  }
  return Program(objects, kernels, steps);
}

// A plan with every argument in PMM and no moves: of the program's shape.
MovePlan all_slow_plan(const Program& p) {
  MovePlan plan;
  for (const auto& k : p.kernels()) plan.in_fast.emplace_back(k.args.size(), false);
  return plan;
}

// A planner hook named `name` that returns `plan` whatever it is asked,
// counting its calls.
ca::policy::PlannerHook fixed_planner(std::string name, MovePlan plan, int* calls = nullptr) {
  ca::policy::PlannerHook hook;
  hook.name = std::move(name);
  hook.description = "a plan written by hand";
  hook.plan = [plan = std::move(plan), calls](const ca::policy::PlanRequest&) {
    if (calls != nullptr) ++*calls;
    return plan;
  };
  return hook;
}

// An AutoTM executor following `planner`, its log kept in `log`.
std::unique_ptr<ca::policy::AutotmPolicy> hook_policy(ca::policy::PlannerHook planner, std::vector<std::string>* log) {
  ca::policy::AutotmPolicyOptions options;
  options.planner = std::move(planner);
  options.time_model = std::make_shared<MillisecondPerSlowArgument>(1e-3);
  options.fast_tier = {100, 100};
  options.slow_tier = {10, 10};
  options.log = [log](const std::string& line) { log->push_back(line); };
  return std::make_unique<ca::policy::AutotmPolicy>(std::move(options));
}

using test::fragmenting_program;

TierCosts unit_kernel_costs(const Program& p) {
  TierCosts c;
  for (const auto& k : p.kernels()) {
    c.fast_seconds.push_back(1.0);
    c.slow_penalty.emplace_back(k.args.size(), 1.0);
  }
  c.to_slow_gbps = 1;
  c.to_fast_gbps = 1;
  return c;
}

const std::function<void(const std::string&)> silent = [](const std::string&) {};

}  // namespace

// ---- 1. the registry ---------------------------------------------------------

TEST_CASE("planned policies: every planned name gives options of its planner, and the registry makes it") {
  const auto registry = ca::policy::Registry::builtin();
  std::vector<ca::policy::PolicyDescriptor> planned;
  for (const ca::policy::PolicyDescriptor& d : registry.descriptors()) {
    if (d.plans_ahead()) planned.push_back(d);
  }
  std::vector<std::string> names;
  for (const ca::policy::PolicyDescriptor& d : planned) names.push_back(d.name());
  // The nine of the header, once each.
  std::vector<std::string> sorted = names;
  std::sort(sorted.begin(), sorted.end());
  CHECK(std::adjacent_find(sorted.begin(), sorted.end()) == sorted.end());
  for (const char* expected : {"autotm-static", "autotm-sync", "autotm-async", "autoswap:doa", "autoswap:aoa",
                               "autoswap:wdoa", "autoswap:swdoa", "autoswap:bo", "redl"}) {
    CHECK(std::find(names.begin(), names.end(), expected) != names.end());
  }
  for (const ca::policy::PolicyDescriptor& d : planned) {
    const std::string& name = d.name();
    CAPTURE(name);
    CHECK(!d.summary().empty());
    CHECK(!d.section().empty());
    CHECK(d.needs_program());
    const std::optional<ca::policy::AutotmPolicyOptions> options = d.planned_options();
    REQUIRE(options.has_value());
    const std::optional<ca::plan::AutotmFormulation> formulation = ca::policy::autotm_formulation(name);
    if (name.starts_with("autotm-")) {
      CHECK(!options->planner.has_value());
      REQUIRE(formulation.has_value());
      CHECK(options->solver.formulation == *formulation);
    } else {
      CHECK(!formulation.has_value());
      REQUIRE(options->planner.has_value());
      CHECK(options->planner->name == name);
      CHECK(!options->planner->description.empty());
      CHECK(static_cast<bool>(options->planner->plan));
    }
    // Nothing else set: the caller adds those.
    CHECK(options->time_model == nullptr);
    CHECK(options->dram_limit == 0);
    CHECK(!options->log);
    CHECK(registry.contains(name));
    CHECK(registry.description(name) == d.summary());
    CHECK(registry.make(name)->name() == name);
    CHECK(ca::policy::AutotmPolicy(*options).name() == name);
  }
  CHECK(ca::policy::autotm_formulation("autotm-static") == ca::plan::AutotmFormulation::static_placement);
  CHECK(ca::policy::autotm_formulation("autotm-sync") == ca::plan::AutotmFormulation::synchronous);
  CHECK(ca::policy::autotm_formulation("autotm-async") == ca::plan::AutotmFormulation::asynchronous);
}

TEST_CASE("planned policies: a name that is not planned gives no options and no planner") {
  const auto registry = ca::policy::Registry::builtin();
  for (const char* name : {"autoswap:", "autoswap:xyz", "autoswap", "autoswap:swdoa ", "Autoswap:doa", "redl2", "red",
                           "", "ca-lm", "autotm", "autotm-", "planned"}) {
    const auto& captured_name = name;  // Clang 14 cannot capture a binding
    CAPTURE(captured_name);
    const std::optional<ca::policy::PolicyDescriptor> d = registry.try_describe(name);
    CHECK((!d || !d->planned_options().has_value()));
    CHECK((!d || !d->plans_ahead()));
    CHECK(!ca::policy::redl_planner(name).has_value());
  }
  // Each planner answers to its own names only; AutoSwap's is named by its score.
  CHECK(!ca::policy::redl_planner("autoswap:doa").has_value());
  CHECK(ca::policy::autoswap_planner(ca::plan::AutoswapScore::bo).name == "autoswap:bo");
  CHECK(registry.describe("autoswap:bo").options().autoswap_score == ca::plan::AutoswapScore::bo);
}

// ---- 2. AutoSwap's plan as AutoTM's ------------------------------------------

TEST_CASE("planned policies: autoswap_executable makes each swap two asynchronous moves, every argument in DRAM") {
  // autoswap_tests.cpp's nested program: A (400 MB) used by kernels 0 and 7,
  // B (200 MB) by 1 and 6, D (300 MB) by 2 and 5, C (100 MB) by 3 and 4,
  // and a persistent E (150 MB) used by kernels 1 and 6: the load peaks at
  // 1150 MB. At a limit of 700 MB A, B and E swap (and the peak stays at
  // 750 MB: C and D have no gap to swap over).
  using test::MB;
  using test::autoswap::Use;
  const Program p = test::autoswap::program_of(
      {{400 * MB, false}, {200 * MB, false}, {100 * MB, false}, {300 * MB, false}, {150 * MB, true}},
      {{{0, W}}, {{1, W}, {4, R}}, {{3, W}}, {{2, W}}, {{2, R}}, {{3, R}}, {{1, R}, {4, W}}, {{0, R}}});
  const TierCosts costs = test::autoswap::costs_of(std::vector<double>(8, 1.0), 1.0, 2.0);
  ca::plan::AutoswapOptions o;
  o.limit = 700 * MB;
  ca::plan::AutoswapPlan swaps = ca::plan::autoswap_plan(p, costs, o);
  REQUIRE(swaps.swaps.size() >= 2);
  // Picked in any order, the moves come out sorted by kernel: reversed, the
  // picks are not.
  std::reverse(swaps.swaps.begin(), swaps.swaps.end());

  const MovePlan plan = ca::policy::autoswap_executable(p, swaps);
  REQUIRE(plan.in_fast.size() == p.kernels().size());
  for (std::size_t k = 0; k < p.kernels().size(); ++k) {
    CAPTURE(k);
    CHECK(plan.in_fast[k] == std::vector<bool>(p.kernels()[k].args.size(), true));
  }
  CHECK(plan.moves.size() == 2 * swaps.swaps.size());
  for (const ca::plan::AutoswapSwap& s : swaps.swaps) {
    const ca::plan::AutoswapCandidate& c = s.candidate;
    CAPTURE(c.object);
    CAPTURE(c.gap);
    const TierMove out{c.object, c.out_kernel, false, true};
    const TierMove in{c.object, s.in_kernel, true, true};
    CHECK(std::count(plan.moves.begin(), plan.moves.end(), out) == 1);
    CHECK(std::count(plan.moves.begin(), plan.moves.end(), in) == 1);
  }
  for (const TierMove& m : plan.moves) {
    CHECK(m.asynchronous);
    CHECK(m.kernel < p.kernels().size());
    CHECK(m.object < p.objects().size());
  }
  CHECK(std::is_sorted(plan.moves.begin(), plan.moves.end(),
                       [](const TierMove& a, const TierMove& b) { return a.kernel < b.kernel; }));
  CHECK(plan.modeled_seconds == doctest::Approx(swaps.iteration_seconds + swaps.overhead_seconds));
  CHECK(!plan.optimal);
  test::check_contains(plan.status, std::to_string(swaps.swaps.size()) + " swaps of " +
                                        std::to_string(swaps.candidates) + " candidates");
  if (!swaps.fits) test::check_contains(plan.status, "over the limit");
  // The executor takes it as a plan of this program.
  std::vector<std::string> log;
  ca::Runtime rt(test::two_tiers(1 << 20, 8 << 20), hook_policy(fixed_planner("test:autoswap", plan), &log));
  CHECK_NOTHROW(rt.set_program(p));

  // No swaps: every argument in DRAM, nothing moves.
  o.limit = 2000 * MB;
  const ca::plan::AutoswapPlan none = ca::plan::autoswap_plan(p, costs, o);
  REQUIRE(none.swaps.empty());
  const MovePlan still = ca::policy::autoswap_executable(p, none);
  CHECK(still.moves.empty());
  CHECK(still.in_fast.size() == p.kernels().size());
  CHECK(still.modeled_seconds == doctest::Approx(8.0));
}

// ---- 3. fit_to_heap ------------------------------------------------------------

TEST_CASE("planned policies: fit_to_heap lowers the limit by the overflow until AutoTM's plan fits the heap") {
  const Program p = fragmenting_program();
  const TierCosts costs = unit_kernel_costs(p);
  const ca::policy::PlanRequest request{p, costs, 192, 64, silent};
  std::vector<std::uint64_t> limits;
  const auto autotm_at = [&](std::uint64_t limit) {
    limits.push_back(limit);
    ca::plan::AutotmOptions o;
    o.formulation = ca::plan::AutotmFormulation::synchronous;
    o.dram_limit = limit;
    o.relative_gap = 0;
    o.max_retries = 0;  // fit_to_heap is the loop
    return ca::plan::autotm_plan(p, costs, o);
  };

  SUBCASE("with retries, the first plan that fits") {
    const MovePlan plan = ca::policy::fit_to_heap(request, autotm_at, 5);
    // The first plan (everything in DRAM) reaches 256 on the heap.
    REQUIRE(limits.size() >= 2);
    CHECK(limits.front() == 192);
    for (std::size_t i = 1; i < limits.size(); ++i) CHECK(limits[i] < limits[i - 1]);
    CHECK(plan.retries >= 1);
    CHECK(plan.retries == limits.size() - 1);
    CHECK(plan.fits);
    CHECK(plan.fast_extent <= 192);
    const auto extents = ca::plan::autotm_dram_extents(p, plan, 64);
    CHECK(*std::max_element(extents.begin(), extents.end()) == plan.fast_extent);
    CHECK(plan.kernel_limits == std::vector<std::uint64_t>(p.kernels().size(), limits.back()));
    // Lowered by its overflow, at every kernel: 192 * 192 / 256; then one
    // of a, b, c and one of b, d are in PMM (4 s).
    CHECK(limits[1] == 144);
    CHECK(plan.modeled_seconds == doctest::Approx(4.0));
    test::check_contains(plan.status, "fits in");
    test::check_contains(plan.status, "after 1 retry");
    CHECK(plan.seconds >= 0);
  }
  SUBCASE("with no retries, the plan as it is, saying it does not fit") {
    const MovePlan plan = ca::policy::fit_to_heap(request, autotm_at, 0);
    CHECK(limits == std::vector<std::uint64_t>{192});
    CHECK(plan.retries == 0);
    CHECK(!plan.fits);
    CHECK(plan.fast_extent == 256);
    CHECK(plan.kernel_limits == std::vector<std::uint64_t>{192, 192});
    CHECK(plan.modeled_seconds == doctest::Approx(2.0));
    test::check_contains(plan.status, "reaches");
    test::check_contains(plan.status, "after 0 retries");
  }
}

TEST_CASE("planned policies: fit_to_heap returns the plan reaching least far when none fits") {
  // A planner that does not keep its limit: all in DRAM (256 on the heap),
  // then d alone in DRAM (128), then all in DRAM again; the limit is 100.
  const Program p = fragmenting_program();
  const TierCosts costs = unit_kernel_costs(p);
  const ca::policy::PlanRequest request{p, costs, 100, 64, silent};
  MovePlan all_dram;
  all_dram.in_fast = {{true, true, true}, {true, true}};
  all_dram.status = "all";
  MovePlan d_only;
  d_only.in_fast = {{false, false, false}, {false, true}};
  d_only.status = "d";
  REQUIRE(ca::plan::autotm_dram_extents(p, all_dram, 64) == std::vector<std::uint64_t>{192, 256});
  REQUIRE(ca::plan::autotm_dram_extents(p, d_only, 64) == std::vector<std::uint64_t>{0, 128});
  std::vector<std::uint64_t> limits;
  const MovePlan plan = ca::policy::fit_to_heap(
      request,
      [&](std::uint64_t limit) {
        limits.push_back(limit);
        return limits.size() == 2 ? d_only : all_dram;
      },
      2);
  // 100, then 100 * 100 / 256, then 39 * 100 / 128: each retry lower.
  CHECK(limits == std::vector<std::uint64_t>{100, 39, 30});
  CHECK(!plan.fits);
  CHECK(plan.retries == 1);
  CHECK(plan.fast_extent == 128);
  CHECK(plan.kernel_limits == std::vector<std::uint64_t>{39, 39});
  CHECK(plan.status.starts_with("d;"));
  test::check_contains(plan.status, "reaches");
  test::check_contains(plan.status, "after 1 retry");
}

TEST_CASE(
    "planned policies: ReDL with a judge keeps the plan judged fastest: the model's best 16 period sizes, "
    "then the 3 judged fastest with copies issued further ahead, then the 3 fastest plans with longer "
    "short-lived objects; once with room by first use, once by slow-tier cost; then the 3 fastest of all "
    "planned to 95, 90 and 80% of the DRAM limit") {
  test::Rng rng(test::test_seed(83));
  CAPTURE(rng.seed());
  const auto period_of = [](const MovePlan& plan) {
    const std::size_t at = plan.status.find("periods of ");
    REQUIRE(at != std::string::npos);
    return static_cast<std::uint32_t>(std::stoul(plan.status.substr(at + 11)));
  };
  const auto ahead_of = [](const MovePlan& plan) {
    const std::string said = "copies in issued up to ";
    const std::size_t at = plan.status.find(said);
    return at == std::string::npos ? 1u : static_cast<std::uint32_t>(std::stoul(plan.status.substr(at + said.size())));
  };
  const auto short_lived_of = [](const MovePlan& plan) {
    const std::string said = "short-lived up to ";
    const std::size_t at = plan.status.find(said);
    return at == std::string::npos ? 1u : static_cast<std::uint32_t>(std::stoul(plan.status.substr(at + said.size())));
  };
  const auto by_cost_of = [](const MovePlan& plan) {
    return plan.status.find("room by slow-tier cost") != std::string::npos;
  };
  // The percentage of the DRAM limit the plan was made to (100: all of it).
  const auto limit_of = [](const MovePlan& plan) {
    const std::string said = "planned to ";
    const std::size_t at = plan.status.rfind(said);
    return at == std::string::npos ? 100u
                                   : static_cast<std::uint32_t>(std::stoul(plan.status.substr(at + said.size())));
  };
  const ca::policy::PlannerHook hook = ca::policy::redl_planner("redl").value();
  int judged_runs = 0;
  for (int i = 0; i < 30; ++i) {
    CAPTURE(i);
    const Program p = test::autoswap::random_program(rng, rng.between(6, 14), rng.between(20, 40), 1);
    const TierCosts costs = unit_kernel_costs(p);
    const std::uint64_t limit = std::max<std::uint64_t>(64, p.max_live() * rng.between(20, 60) / 100);
    // The model's own search, as the hook's first plan runs it.
    ca::plan::RedlOptions o;
    o.fast_limit = limit;
    o.alignment = 0;
    const ca::plan::RedlPlan searched = ca::plan::redl_plan(p, costs, o);
    // Period size, ahead, short-lived, room by slow-tier cost, % of the limit.
    using Asked = std::tuple<std::uint32_t, std::uint32_t, std::uint32_t, bool, std::uint32_t>;
    std::vector<Asked> asked;
    // This judge prefers long periods, then copies issued far ahead, then
    // long short-lived objects, then room by slow-tier cost, then a plan
    // made to less of the limit, whatever the model says.
    const ca::policy::PlanJudge judge = [&](const MovePlan& plan) {
      asked.emplace_back(period_of(plan), ahead_of(plan), short_lived_of(plan), by_cost_of(plan), limit_of(plan));
      const auto& [size, ahead, short_lived, by_cost, limit_pct] = asked.back();
      return -(10000.0 * size + 100.0 * ahead + short_lived + (by_cost ? 0.5 : 0.0) + 0.001 * (100 - limit_pct));
    };
    const MovePlan unjudged = hook.plan(ca::policy::PlanRequest{p, costs, limit, 64, silent});
    CHECK(period_of(unjudged) == searched.period_layers);
    CHECK(ahead_of(unjudged) == 1);
    CHECK(short_lived_of(unjudged) == 1);
    CHECK(!by_cost_of(unjudged));
    CHECK(limit_of(unjudged) == 100);
    const MovePlan judged = hook.plan(ca::policy::PlanRequest{p, costs, limit, 64, silent, &judge});
    if (searched.search.size() < 2) {
      CHECK(asked.empty());  // one size tried: nothing to weigh
      continue;
    }
    ++judged_runs;
    // The model's choice first, then the sizes it rates next, 16 in all,
    // each with its copies issued one period ahead (the paper's).
    std::vector<ca::plan::RedlTrial> by_model = searched.search;
    std::stable_sort(by_model.begin(), by_model.end(),
                     [](const auto& a, const auto& b) { return a.modeled_seconds < b.modeled_seconds; });
    std::vector<std::uint32_t> rated{searched.period_layers};
    for (const ca::plan::RedlTrial& t : by_model) {
      if (rated.size() < 16 && t.period_layers != searched.period_layers) rated.push_back(t.period_layers);
    }
    // Then the three judged fastest (here the longest), fastest first, with
    // copies issued 2, 3, 4, 6, 8, 12, 16, 20 and 24 periods ahead.
    std::vector<std::uint32_t> sizes = rated;
    std::sort(sizes.rbegin(), sizes.rend());
    if (sizes.size() > 3) sizes.erase(sizes.begin() + 3, sizes.end());
    // Then the three plans judged fastest (the longest size, 24, 20 and 16
    // periods ahead), each with objects of up to 2, 4, 6, 8 and 12 layers
    // held as short-lived. All of it with the room of a tight period by
    // first use, then all of it again by slow-tier cost.
    std::vector<Asked> expected;
    for (const bool by_cost : {false, true}) {
      for (const std::uint32_t size : rated) expected.emplace_back(size, 1, 1, by_cost, 100);
      for (const std::uint32_t size : sizes) {
        for (const std::uint32_t ahead : {2u, 3u, 4u, 6u, 8u, 12u, 16u, 20u, 24u}) {
          expected.emplace_back(size, ahead, 1, by_cost, 100);
        }
      }
      for (const std::uint32_t ahead : {24u, 20u, 16u}) {
        for (const std::uint32_t layers : {2u, 4u, 6u, 8u, 12u}) {
          expected.emplace_back(sizes.front(), ahead, layers, by_cost, 100);
        }
      }
    }
    // Then the three fastest of all (by slow-tier cost, 12 layers; by first
    // use, 12; by cost, 8), each planned to 95, 90 and 80% of the limit.
    for (const auto& [layers, by_cost] : {std::pair{12u, true}, std::pair{12u, false}, std::pair{8u, true}}) {
      for (const std::uint32_t pct : {95u, 90u, 80u}) expected.emplace_back(sizes.front(), 24, layers, by_cost, pct);
    }
    CHECK(asked == expected);
    CHECK(period_of(judged) == sizes.front());
    CHECK(ahead_of(judged) == 24);
    CHECK(short_lived_of(judged) == 12);
    CHECK(by_cost_of(judged));
    CHECK(limit_of(judged) == 80);
    CHECK(judged.judged == expected.size());
    test::check_contains(judged.status, "judged " + std::to_string(expected.size()) + " plans");
  }
  CHECK(judged_runs >= 10);
}

// ---- 4. a plan not of the program -------------------------------------------

TEST_CASE("planned policies: a planner's plan that is not of the program is refused, naming the policy") {
  // Two persistent objects of 64 KiB; three kernels: (0 w), (1 r), (0 r, 1 w).
  const Program p = persistent_program({64 * KiB, 64 * KiB},
                                       {{{0, 64 * KiB, W}}, {{1, 64 * KiB, R}}, {{0, 64 * KiB, R}, {1, 64 * KiB, W}}});
  MovePlan plan = all_slow_plan(p);
  std::string what;
  SUBCASE("a kernel too few") {
    plan.in_fast.pop_back();
    what = "in_fast has 2 kernels, the program 3";
  }
  SUBCASE("an argument too few") {
    plan.in_fast[2].pop_back();
    what = "in_fast[2] has 1 arguments, the kernel 2";
  }
  SUBCASE("a move of an object past the program") {
    plan.moves.push_back({2, 0, true, true});
    what = "a move of object 2 at kernel 0 (the program has 2 objects and 3 kernels)";
  }
  SUBCASE("a move at a kernel past the program") {
    plan.moves.push_back({1, 3, false, false});
    what = "a move of object 1 at kernel 3";
  }
  std::vector<std::string> log;
  int calls = 0;
  ca::Runtime rt(test::two_tiers(1 << 20, 8 << 20), hook_policy(fixed_planner("test:shapeless", plan, &calls), &log));
  const std::string message = test::invalid_argument_of([&] { rt.set_program(p); });
  CHECK(calls == 1);
  test::check_contains(message, "test:shapeless: its planner returned a plan that is not of this program: " + what);
  // The same plan of the right shape is taken.
  ca::Runtime good(test::two_tiers(1 << 20, 8 << 20),
                   hook_policy(fixed_planner("test:shaped", all_slow_plan(p)), &log));
  CHECK_NOTHROW(good.set_program(p));
  const auto* policy = dynamic_cast<const ca::policy::AutotmPolicy*>(&good.policy());
  REQUIRE(policy != nullptr);
  CHECK(policy->counters().plans == 1);
  REQUIRE(policy->plan() != nullptr);
  CHECK(policy->plan()->in_fast == all_slow_plan(p).in_fast);
}

// ---- 5. DSMA: a copy ahead that no use promoted ------------------------------

namespace {

void fill_words(ca::CachedArray<std::uint64_t>& a, std::uint64_t seed) { test::fill_words(a.write(), seed); }

}  // namespace

TEST_CASE("planned policies: a copy made ahead that no use promoted is dropped when the plan moves its object out") {
  // Y (object 0) is written by kernels 0 and 3 and read by kernel 2, in
  // DRAM; X (object 1) is read by kernel 1 from PMM (in_fast false: DSMA)
  // while a copy into DRAM, started beside kernel 0, is made ahead; the plan
  // then moves X out, synchronously after kernel 1 or beside kernel 2.
  constexpr std::uint64_t bytes = 256 * KiB;
  const Program p =
      persistent_program({bytes, bytes}, {{{0, bytes, W}}, {{1, bytes, R}}, {{0, bytes, R}}, {{0, bytes, W}}});
  MovePlan plan;
  plan.in_fast = {{true}, {false}, {true}, {true}};
  plan.moves.push_back({1, 0, true, true});
  std::string how;
  SUBCASE("a synchronous move out after the read") {
    plan.moves.push_back({1, 1, false, false});
    how = "synchronous";
  }
  SUBCASE("an asynchronous move out beside the next kernel") {
    plan.moves.push_back({1, 2, false, true});
    how = "asynchronous";
  }
  CAPTURE(how);
  std::vector<std::string> log;
  auto owned = hook_policy(fixed_planner("test:dsma", plan), &log);
  const ca::policy::AutotmPolicy& policy = *owned;
  ca::Runtime rt(test::two_tiers(1 << 20, 8 << 20), std::move(owned));
  auto y = rt.array<std::uint64_t>(bytes / 8);
  auto x = rt.array<std::uint64_t>(bytes / 8);
  fill_words(y, 100);
  fill_words(x, 200);
  rt.set_program(p);
  REQUIRE(policy.counters().plans == 1);
  ca::DataManager& dm = rt.manager();
  const ca::Object& xo = x.object();

  std::uint64_t y_seed = 100;
  for (std::uint64_t iteration = 1; iteration <= 3; ++iteration) {
    CAPTURE(iteration);
    rt.begin_iteration();
    std::uint64_t fast_before = 0;
    {
      auto guard = rt.lock();
      fast_before = dm.usage(0).bytes_used;
    }
    const auto moves_in = policy.counters().moves_in;
    const auto moves_out = policy.counters().moves_out;
    bool ahead_at_0 = false, x_in_place = false, ahead_at_1 = false, x_held = false;
    rt.kernel(ca::writes(y), [&](std::span<std::uint64_t> data) {
      {
        auto guard = rt.lock();
        ahead_at_0 = dm.getlinked(*dm.getprimary(xo), 0) != nullptr;
      }
      CHECK(test::words_hold(data, y_seed));
      y_seed += 1;
      test::fill_words(data, y_seed);
    });
    rt.kernel(ca::reads(x), [&](std::span<const std::uint64_t> data) {
      auto guard = rt.lock();
      x_in_place = dm.device(*dm.getprimary(xo)) == 1;
      ahead_at_1 = dm.getlinked(*dm.getprimary(xo), 0) != nullptr;
      x_held = test::words_hold(data, 200);
    });
    rt.kernel(ca::reads(y), [&](std::span<const std::uint64_t> data) { CHECK(test::words_hold(data, y_seed)); });
    bool x_dropped = false;
    std::uint64_t fast_at_3 = 0;
    rt.kernel(ca::writes(y), [&](std::span<std::uint64_t> data) {
      CHECK(test::words_hold(data, y_seed));
      auto guard = rt.lock();
      x_dropped = dm.getlinked(*dm.getprimary(xo), 0) == nullptr && dm.device(*dm.getprimary(xo)) == 1;
      fast_at_3 = dm.usage(0).bytes_used;
    });
    CHECK(x_in_place);  // DSMA: read from PMM
    CHECK(x_held);
    if (iteration >= 2) {
      // X is known to the executor from the first iteration on: the copy
      // ahead is made beside kernel 0 and is still a secondary at kernel 1.
      CHECK(ahead_at_0);
      CHECK(ahead_at_1);
      CHECK(policy.counters().moves_in == moves_in + 1);
      CHECK(policy.counters().moves_out == moves_out + 1);  // the copy dropped
      // The move out was made by kernel 3: no region of X in DRAM, and
      // DRAM holds what it held when the iteration began (Y).
      CHECK(x_dropped);
      CHECK(fast_at_3 == fast_before);
    }
    auto guard = rt.lock();
    dm.finish_copies();
    CHECK(dm.getlinked(*dm.getprimary(xo), 0) == nullptr);
    if (iteration >= 2) CHECK(dm.usage(0).bytes_used == fast_before);
    CHECK(test::primary_words_hold(dm, xo, 200));
    CHECK(test::primary_words_hold(dm, y.object(), y_seed));
    dm.check_invariants(true);
  }
  CHECK(policy.counters().departures == 0);
  CHECK(policy.counters().iterations_followed == 2);
}

// AutotmPolicy::make_plan must not keep a refused plan: the next iteration
// would follow it and index past its own tables.
TEST_CASE("planned policies: a rejected plan is not followed; the policy carries on as CA:LM") {
  const Program p = persistent_program({64 * KiB, 64 * KiB},
                                       {{{0, 64 * KiB, W}}, {{1, 64 * KiB, R}}, {{0, 64 * KiB, R}, {1, 64 * KiB, W}}});
  MovePlan plan = all_slow_plan(p);
  plan.in_fast.pop_back();
  std::vector<std::string> log;
  auto owned = hook_policy(fixed_planner("test:shapeless", plan), &log);
  const ca::policy::AutotmPolicy& policy = *owned;
  ca::Runtime rt(test::two_tiers(1 << 20, 8 << 20), std::move(owned));
  auto a = rt.array<std::uint64_t>(64 * KiB / 8);
  auto b = rt.array<std::uint64_t>(64 * KiB / 8);
  CHECK_THROWS_AS(rt.set_program(p), ca::invalid_argument);
  CHECK(policy.plan() == nullptr);
  CHECK(policy.counters().plans == 0);
  for (std::uint64_t i = 0; i < 2; ++i) {
    rt.begin_iteration();
    rt.kernel(ca::writes(a), [&](std::span<std::uint64_t> x) { test::fill_words(x, i); });
    rt.kernel(ca::reads(b), [](std::span<const std::uint64_t>) {});
    rt.kernel(ca::reads(a), ca::writes(b), [&](std::span<const std::uint64_t> x, std::span<std::uint64_t> y) {
      std::copy(x.begin(), x.end(), y.begin());
    });
  }
  auto guard = rt.lock();
  CHECK(test::primary_words_hold(rt.manager(), b.object(), 1));
  rt.manager().check_invariants(true);
}

// ---- 6. end to end through a Runtime ------------------------------------------

namespace {

// A training-like program, chosen by a seed: `layers` parameters (1-1.25
// MiB, persistent); forward kernel i reads activation i-1 (and, for some i,
// an earlier one: a skip) and parameter i and writes activation i, created
// for it; backward kernel i reads activation i, reads and writes parameter
// i, and retires the activation. Every read checks the contents the model
// expects; every write writes a new pattern.
struct Workload {
  std::vector<std::size_t> param_words, activation_words;
  std::vector<std::optional<std::size_t>> skip;  // by layer: the earlier activation also read
  std::uint64_t peak_bytes = 0;                  // all parameters and activations
};

Workload make_workload(test::Rng& rng, std::size_t layers) {
  Workload w;
  const auto words = [&] { return (mib + rng.between(0, 4) * 64 * KiB) / sizeof(std::uint64_t); };
  for (std::size_t i = 0; i < layers; ++i) {
    w.param_words.push_back(words());
    w.activation_words.push_back(words());
    w.skip.push_back(i >= 2 && rng.percent(50) ? std::optional<std::size_t>(rng.below(i - 1)) : std::nullopt);
    w.peak_bytes += (w.param_words.back() + w.activation_words.back()) * sizeof(std::uint64_t);
  }
  return w;
}

struct WorkloadRun {
  ca::Runtime& rt;
  const Workload& w;
  std::vector<ca::CachedArray<std::uint64_t>> params;
  std::vector<std::uint64_t> param_seeds;
  std::uint64_t next_seed = 1000;
  std::uint64_t bad_reads = 0;
  std::uint64_t slow_arguments = 0;  // arguments not in the fast tier while their kernel ran

  WorkloadRun(ca::Runtime& runtime, const Workload& workload) : rt(runtime), w(workload) {
    for (std::size_t i = 0; i < w.param_words.size(); ++i) {
      params.push_back(rt.array<std::uint64_t>(w.param_words[i]));
      param_seeds.push_back(next_seed++);
      auto data = params.back().write();
      test::fill_words(data, param_seeds.back());
    }
  }

  void check(std::span<const std::uint64_t> data, std::uint64_t seed) {
    if (!test::words_hold(data, seed)) ++bad_reads;
  }
  void write(std::span<std::uint64_t> data, std::uint64_t& seed) {
    seed = next_seed++;
    test::fill_words(data, seed);
  }
  void count_slow(std::initializer_list<const ca::Object*> objects) {
    auto guard = rt.lock();
    for (const ca::Object* o : objects) slow_arguments += rt.manager().device(*rt.manager().getprimary(*o)) != 0;
  }

  void iteration() {
    rt.begin_iteration();
    const std::size_t layers = w.param_words.size();
    std::vector<std::optional<ca::CachedArray<std::uint64_t>>> act(layers);
    std::vector<std::uint64_t> act_seeds(layers);
    for (std::size_t i = 0; i < layers; ++i) {
      act[i].emplace(rt.array<std::uint64_t>(w.activation_words[i]));
      auto& out = *act[i];
      const auto& param = params[i];
      if (i == 0) {
        rt.kernel(ca::reads(param), ca::writes(out), [&](std::span<const std::uint64_t> p, std::span<std::uint64_t> y) {
          count_slow({&param.object(), &out.object()});
          check(p, param_seeds[i]);
          write(y, act_seeds[i]);
        });
      } else if (!w.skip[i]) {
        const auto& in = *act[i - 1];
        rt.kernel(ca::reads(in, param), ca::writes(out),
                  [&](std::span<const std::uint64_t> x, std::span<const std::uint64_t> p, std::span<std::uint64_t> y) {
                    count_slow({&in.object(), &param.object(), &out.object()});
                    check(x, act_seeds[i - 1]);
                    check(p, param_seeds[i]);
                    write(y, act_seeds[i]);
                  });
      } else {
        const auto& in = *act[i - 1];
        const std::size_t s = *w.skip[i];
        const auto& skip = *act[s];
        rt.kernel(ca::reads(in, param, skip), ca::writes(out),
                  [&](std::span<const std::uint64_t> x, std::span<const std::uint64_t> p,
                      std::span<const std::uint64_t> z, std::span<std::uint64_t> y) {
                    count_slow({&in.object(), &param.object(), &skip.object(), &out.object()});
                    check(x, act_seeds[i - 1]);
                    check(p, param_seeds[i]);
                    check(z, act_seeds[s]);
                    write(y, act_seeds[i]);
                  });
      }
    }
    for (std::size_t i = layers; i-- > 0;) {
      const auto& in = *act[i];
      auto& param = params[i];
      rt.kernel(ca::reads(in), ca::writes(param), [&](std::span<const std::uint64_t> x, std::span<std::uint64_t> p) {
        count_slow({&in.object(), &param.object()});
        check(x, act_seeds[i]);
        check(p, param_seeds[i]);
        write(p, param_seeds[i]);
      });
      act[i].reset();  // after its last use (a skip reads it in the forward pass)
    }
  }
};

struct AutoswapSwdoa {
  static constexpr const char* name = "autoswap:swdoa";
  static constexpr bool all_fast = true;  // AutoSwap never runs a kernel on the slow tier
};
struct Redl {
  static constexpr const char* name = "redl";
  static constexpr bool all_fast = false;  // DSMA reads in place
};

}  // namespace

TEST_CASE_TEMPLATE("planned policies: a training-like program runs under the planner's plan without losing a byte", P,
                   AutoswapSwdoa, Redl) {
  test::Rng rng(test::test_seed(61));
  CAPTURE(rng.seed());
  const Workload w = make_workload(rng, 5);
  // The fast tier holds about 75% of the peak load.
  const std::uint64_t fast = (w.peak_bytes * 3 / 4) / (64 * KiB) * (64 * KiB);
  std::optional<ca::policy::AutotmPolicyOptions> options =
      ca::policy::Registry::builtin().describe(P::name).planned_options();
  REQUIRE(options.has_value());
  std::vector<std::string> log;
  options->time_model = std::make_shared<MillisecondPerSlowArgument>(1e-3);
  options->fast_tier = {100, 100};
  options->slow_tier = {10, 10};  // a MiB in 0.1 ms: a swap over a kernel or two pays
  options->log = [&log](const std::string& line) { log.push_back(line); };
  auto owned = std::make_unique<ca::policy::AutotmPolicy>(std::move(*options));
  const ca::policy::AutotmPolicy& policy = *owned;
  ca::Runtime rt(test::two_tiers(fast, 64 * mib), std::move(owned));
  CHECK(rt.policy_name() == P::name);
  WorkloadRun run(rt, w);

  run.iteration();  // CA:LM, no program yet
  rt.record_program();
  run.iteration();  // recorded
  const std::uint64_t slow_before = run.slow_arguments;
  run.iteration();  // planned at its beginning, and followed
  REQUIRE(rt.program() != nullptr);
  REQUIRE(policy.plan() != nullptr);
  CAPTURE(policy.plan()->status);
  CHECK(rt.program()->max_live() > fast);
  // Moves in every iteration that follows the plan, not only the first.
  const auto moves_before = policy.counters().moves_in + policy.counters().moves_out;
  for (int i = 0; i < 4; ++i) run.iteration();
  rt.collect();

  CHECK(run.bad_reads == 0);
  CHECK(policy.counters().plans == 1);
  CHECK(policy.counters().departures == 0);
  CHECK(policy.counters().iterations_followed >= 4);
  CHECK(policy.counters().moves_in + policy.counters().moves_out > moves_before);
  CHECK(policy.counters().moves_in > 0);
  if (P::all_fast) CHECK(run.slow_arguments == slow_before);
  auto guard = rt.lock();
  rt.manager().finish_copies();
  CHECK(rt.manager().usage(0).bytes_used <= fast);
  for (std::size_t i = 0; i < run.params.size(); ++i) {
    CAPTURE(i);
    CHECK(test::primary_words_hold(rt.manager(), run.params[i].object(), run.param_seeds[i]));
  }
  rt.manager().check_invariants(true);
}
