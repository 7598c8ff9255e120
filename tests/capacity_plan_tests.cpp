// The capacity planner (sim/capacity_plan.hpp) and its prices
// (sim/memory_prices.hpp) on a hand-made program: a program's trace
// replays as the program, the points come in order and do not depend on how
// many threads ran them, the baseline and the bounds are what they must be,
// the answer is the smallest fast tier within the bound, and bad options and
// bad price files are refused with messages that say what is allowed.
#include <doctest/doctest.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cachedarrays/cachedarrays.hpp"
#include "test_support.hpp"

namespace ca = cachedarrays;
namespace plan = cachedarrays::plan;

namespace {

using test::KiB;

// A forward and backward pass of two layers: weights w0, w1 (persistent),
// activations a0, a1 created and retired, a gradient g, hints, a collect
// and a scoped read() access.
plan::Program two_layer_program() {
  using plan::StepKind;
  std::vector<plan::ProgramObject> objects{
      {64 * KiB, true}, {64 * KiB, true}, {512 * KiB, false}, {512 * KiB, false}, {512 * KiB, false}};
  const auto arg = [&](std::uint32_t o, ca::Access access) { return plan::ProgramArg{o, objects[o].bytes, access}; };
  std::vector<plan::ProgramKernel> kernels{
      {"fwd0", {arg(0, ca::Access::read), arg(2, ca::Access::write)}},
      {"fwd1", {arg(1, ca::Access::read), arg(2, ca::Access::read), arg(3, ca::Access::write)}},
      {"bwd1", {arg(3, ca::Access::read), arg(1, ca::Access::write), arg(4, ca::Access::write)}},
      {"bwd0", {arg(4, ca::Access::read), arg(2, ca::Access::read), arg(0, ca::Access::write)}},
      {ca::scoped_access_kernel(ca::Access::read), {arg(0, ca::Access::read)}},
  };
  std::vector<plan::ProgramStep> steps{
      {StepKind::create, 2},
      {StepKind::kernel, 0},
      {StepKind::create, 3},
      {StepKind::kernel, 1},
      {StepKind::hint, 2, ca::Hint::archive},
      {StepKind::create, 4},
      {StepKind::kernel, 2},
      {StepKind::retire, 3},
      {StepKind::hint, 2, ca::Hint::will_read},
      {StepKind::kernel, 3},
      {StepKind::retire, 2},
      {StepKind::retire, 4},
      {StepKind::kernel, 4},
      {StepKind::collect, 0},
  };
  return plan::Program(objects, kernels, steps);
}

ca::CapacityPlanOptions capacity_plan_options(std::vector<double> fractions, std::vector<std::string> policies) {
  ca::CapacityPlanOptions o;
  o.fractions = std::move(fractions);
  o.policies = std::move(policies);
  o.fast = {"dram", 100, 80};
  o.slow = {"optane", 30, 10};
  return o;
}

}  // namespace

TEST_CASE("Program::to_trace: the trace's program is the program, scoped accesses and persistent objects included") {
  const plan::Program program = two_layer_program();
  const ca::Trace trace = program.to_trace();
  CHECK(plan::Program::from_trace(trace) == program);
  // Persistent objects are created before the iteration begins.
  int created_before = 0;
  for (const ca::TraceEvent& e : trace.events()) {
    if (e.kind == ca::TraceKind::iteration) break;
    if (e.kind == ca::TraceKind::create) ++created_before;
  }
  CHECK(created_before == 2);
}

TEST_CASE("Program::to_trace: a closed iteration repeats, each iteration the program; an open one is refused by name") {
  const plan::Program program = two_layer_program();
  CHECK_FALSE(program.unrepeatable().has_value());
  const ca::Trace trace = program.to_trace(3);
  int iterations = 0;
  for (const ca::TraceEvent& e : trace.events()) iterations += e.kind == ca::TraceKind::iteration ? 1 : 0;
  CHECK(iterations == 3);
  for (std::uint64_t i = 1; i <= 3; ++i) {
    CAPTURE(i);
    CHECK(plan::Program::from_trace(trace, i) == program);
  }
  // Replayed with everything in the fast tier, every iteration takes the
  // same time, so the steady state is one iteration's.
  const auto all_fast = [](const ca::Trace& t) {
    ca::Runtime rt({ca::virtual_device(1 << 24, "fast"), ca::virtual_device(1 << 24, "slow")});
    return ca::replay(t, rt, {{"dram", 100, 80}, {"optane", 30, 10}});
  };
  const ca::ReplayResult one = all_fast(program.to_trace());
  const ca::ReplayResult five = all_fast(program.to_trace(5));
  CHECK(ca::steady_iteration(five).seconds == doctest::Approx(one.modeled_seconds));
  CHECK(five.modeled_seconds == doctest::Approx(5 * one.modeled_seconds));
  CHECK(test::invalid_argument_of([&] { (void)program.to_trace(0); }).find("0 iterations") != std::string::npos);

  // An object created and not retired would be created again while alive;
  // a persistent object retired would be used after its retirement.
  using plan::StepKind;
  const std::vector<plan::ProgramObject> objects{{64 * KiB, true}, {64 * KiB, false}};
  const std::vector<plan::ProgramKernel> kernels{
      {"k", {{0, 64 * KiB, ca::Access::read}, {1, 64 * KiB, ca::Access::write}}}};
  const plan::Program kept(objects, kernels, {{StepKind::create, 1}, {StepKind::kernel, 0}});
  REQUIRE(kept.unrepeatable().has_value());
  CHECK(*kept.unrepeatable() == "object 1 is created and not retired");
  CHECK(test::invalid_argument_of([&] { (void)kept.to_trace(2); }).find("object 1 is created and not retired") !=
        std::string::npos);
  CHECK(plan::Program::from_trace(kept.to_trace(1)) == kept);  // once is fine
  const plan::Program dropped(
      objects, kernels, {{StepKind::create, 1}, {StepKind::kernel, 0}, {StepKind::retire, 1}, {StepKind::retire, 0}});
  CHECK(dropped.unrepeatable() == std::optional<std::string>{"persistent object 0 is retired"});
}

TEST_CASE("capacity plan: fast_tier_bytes is whole pages, at least one, the footprint at 100%, more above") {
  CHECK(ca::fast_tier_bytes(0.5, 1 << 20) == 512 * KiB);
  CHECK(ca::fast_tier_bytes(0.5, 1'000'001) % 4096 == 0);
  CHECK(ca::fast_tier_bytes(0.5, 1'000'001) <= 500'001);
  CHECK(ca::fast_tier_bytes(1e-9, 1 << 20) == 4096);
  CHECK(ca::fast_tier_bytes(1.0, 1'000'001) == 1'000'001);
  CHECK(ca::fast_tier_bytes(1.1, 1 << 20) == 1'155'072);  // 1,153,433 bytes rounded up to 282 pages
  CHECK(ca::fast_tier_bytes(1.7, 1'000'001) % 4096 == 0);
  CHECK(ca::fast_tier_bytes(1.7, 1'000'001) >= 1'700'001);
  CHECK(ca::fast_tier_bytes(1.0000001, 1'000'001) >= 1'000'001);  // never below the footprint
}

TEST_CASE("capacity plan: the replayed footprint holds all-fast exactly; less does not") {
  const ca::Trace trace = two_layer_program().to_trace();
  const std::uint64_t footprint = ca::replayed_footprint(trace);
  CHECK(footprint >= two_layer_program().max_live());
  const std::vector<ca::DeviceModel> models{{"fast", 1, 1}, {"slow", 1, 1}};
  {
    ca::Runtime rt({ca::virtual_device(footprint, "fast"), ca::virtual_device(footprint, "slow")},
                   ca::policy::Registry::builtin().make("all-fast"));
    CHECK_NOTHROW((void)ca::replay(trace, rt, models));
  }
  ca::Runtime rt({ca::virtual_device(footprint - 64, "fast"), ca::virtual_device(footprint, "slow")},
                 ca::policy::Registry::builtin().make("all-fast"));
  CHECK_THROWS_AS((void)ca::replay(trace, rt, models), ca::out_of_memory);
}

TEST_CASE("capacity plan: one point per fraction and policy, in order, the same on one thread as on several") {
  const plan::Program program = two_layer_program();
  const ca::Trace trace = program.to_trace();
  const std::uint64_t footprint = ca::replayed_footprint(trace);
  const std::vector<std::string> policies{"all-fast", "all-slow", "first-touch", "ca-lm", "ca-lma", "2lm", "2lm:m"};
  ca::CapacityPlanOptions options = capacity_plan_options({0.25, 0.5, 1.0}, policies);
  options.threads = 1;
  std::vector<std::size_t> reported;
  std::size_t reported_total = 0;
  const ca::CapacityPlan serial = ca::plan_capacity(trace, program, footprint, options,
                                                    [&](const ca::CapacityPoint&, std::size_t done, std::size_t total) {
                                                      reported.push_back(done);
                                                      reported_total = total;
                                                    });
  options.threads = 2;
  const ca::CapacityPlan parallel = ca::plan_capacity(trace, program, footprint, options);

  REQUIRE(serial.points.size() == 3 * policies.size());
  CHECK(reported_total == serial.points.size() + 1);  // the baseline is a replay too
  REQUIRE(reported.size() == reported_total);
  for (std::size_t i = 0; i < reported.size(); ++i) CHECK(reported[i] == i + 1);
  CHECK(serial.footprint == footprint);
  CHECK(serial.all_fast_seconds > 0);
  CHECK(parallel.all_fast_seconds == serial.all_fast_seconds);
  for (std::size_t i = 0; i < serial.points.size(); ++i) {
    const ca::CapacityPoint& p = serial.points[i];
    CAPTURE(p.policy);
    CAPTURE(p.fraction);
    CHECK(p.policy == policies[i % policies.size()]);
    CHECK(p.fraction == options.fractions[i / policies.size()]);
    CHECK(p.fast_bytes == ca::fast_tier_bytes(p.fraction, footprint));
    CHECK(parallel.points[i].seconds == p.seconds);
    CHECK(parallel.points[i].traffic.slow_read == p.traffic.slow_read);
    // Alone, a point is what it is in the plan.
    const ca::CapacityPoint alone = ca::model_point(trace, program, footprint, p.policy, p.fraction, options);
    CHECK(alone.seconds == p.seconds);
    if (p.seconds) CHECK(p.slowdown == doctest::Approx(*p.seconds / serial.all_fast_seconds));
  }
  const auto at = [&](const std::string& policy, double fraction) {
    for (const ca::CapacityPoint& p : serial.points) {
      if (p.policy == policy && p.fraction == fraction) return p;
    }
    FAIL("no point " << policy << " at " << fraction);
    return ca::CapacityPoint{};
  };
  // all-fast fits only the whole footprint, and there it is the baseline.
  CHECK_FALSE(at("all-fast", 0.5).seconds.has_value());
  CHECK(at("all-fast", 0.5).note == "out of memory");
  CHECK(at("all-fast", 1.0).slowdown == 1.0);
  // Everything on the slower tier is slower, and reads and writes only it.
  CHECK(at("all-slow", 1.0).slowdown > 1.5);
  CHECK(at("all-slow", 1.0).traffic.fast_read == 0);
  CHECK(at("all-slow", 1.0).traffic.slow_read > 0);
  // A quarter of the footprint leaves CA:LM copies to make, and the slow tier holds something.
  CHECK(at("ca-lm", 0.25).traffic.slow_written > 0);
  CHECK(at("ca-lm", 0.25).slow_peak > 0);
  CHECK(at("2lm:m", 0.25).note.find("hit ") == 0);
}

TEST_CASE("capacity plan: no policy replays below the fast tier's lower bound, which each size reports") {
  const plan::Program program = two_layer_program();
  const ca::Trace trace = program.to_trace(4);
  const std::uint64_t footprint = ca::replayed_footprint(trace);
  // Everything that places objects in heaps (the 2LM models cache lines of
  // DRAM, not whole objects, and are not bound by it).
  const ca::policy::Registry registry = ca::policy::Registry::builtin();
  std::vector<std::string> policies;
  for (const std::string& name : ca::all_policies()) {
    if (!registry.describe(name).memory_mode()) policies.push_back(name);
  }
  const std::vector<double> fractions{0.3, 0.6, 1.0};
  const ca::CapacityPlan plan =
      ca::plan_capacity(trace, program, footprint, capacity_plan_options(fractions, policies));
  REQUIRE(plan.bounds.size() == fractions.size());
  CHECK(plan.bounds[0].kernels_over > 0);  // fwd1 alone uses 1088 KiB
  CHECK(plan.bounds[0].slowdown() > 1.01);
  CHECK(plan.bounds[2].slowdown() == doctest::Approx(1.0));
  for (std::size_t f = 0; f < fractions.size(); ++f) {
    CAPTURE(fractions[f]);
    CHECK(plan.bounds[f].fast_bytes == ca::fast_tier_bytes(fractions[f], footprint));
    // The bound's all-fast time is the replay's (one kernel model).
    CHECK(plan.bounds[f].all_fast_seconds == doctest::Approx(plan.all_fast_seconds));
    for (std::size_t p = 0; p < policies.size(); ++p) {
      const ca::CapacityPoint& point = plan.points[f * policies.size() + p];
      CAPTURE(point.policy);
      if (point.seconds) CHECK(point.slowdown >= plan.bounds[f].slowdown() * (1 - 1e-9));
    }
  }
}

TEST_CASE("capacity plan: bad options are refused, saying what is allowed") {
  const plan::Program program = two_layer_program();
  const ca::Trace trace = program.to_trace();
  const auto refused = [&](const ca::CapacityPlanOptions& o, const std::string& part) {
    try {
      (void)ca::plan_capacity(trace, program, 1 << 20, o);
      FAIL("accepted options that should be refused: " << part);
    } catch (const ca::invalid_argument& e) {
      test::check_contains(e.what(), part);
    }
  };
  refused(capacity_plan_options({}, {"ca-lm"}), "no fast-tier fraction");
  refused(capacity_plan_options({-0.5, 0.5}, {"ca-lm"}), "fraction -0.5 is not allowed; each must be >= 0");
  refused(capacity_plan_options({0.5}, {"ca-lm", "lru"}), "unknown policy 'lru'; valid: all-fast");
  ca::CapacityPlanOptions no_bandwidth = capacity_plan_options({0.5}, {"ca-lm"});
  no_bandwidth.slow.write_gbps = 0;
  refused(no_bandwidth, "tier 'optane' needs read and write bandwidths > 0");
  ca::CapacityPlanOptions no_mover = capacity_plan_options({0.5}, {"ca-lm"});
  no_mover.mover_threads = 0;
  refused(no_mover, "the mover has 0 threads; it needs at least 1");
}

TEST_CASE("replay judge: a plan is judged by replaying a policy that follows it; bad input is refused") {
  const plan::Program program = two_layer_program();
  const auto trace = std::make_shared<const ca::Trace>(program.to_trace(4));
  const auto shared_program = std::make_shared<const plan::Program>(program);
  const ca::CapacityPlanOptions o = capacity_plan_options({1.0}, {"all-fast"});
  const plan::MemoryBound memory_bound;
  const plan::TierCosts costs = plan::TierCosts::from_model(
      program, memory_bound, {o.fast.read_gbps, o.fast.write_gbps}, {o.slow.read_gbps, o.slow.write_gbps});
  ca::policy::AutotmPolicyOptions follower = ca::policy::Registry::builtin().describe("redl").planned_options().value();
  follower.fast_tier = {o.fast.read_gbps, o.fast.write_gbps};
  follower.slow_tier = {o.slow.read_gbps, o.slow.write_gbps};
  follower.log = [](const std::string&) {};
  // The judge's machine as the follower plans it: its bandwidths, its sizes.
  const ca::ReplayJudgeMachine machine = ca::ReplayJudgeMachine::as_planned(1 << 24, 1 << 25, follower);
  CHECK(machine.fast_bytes == 1 << 24);
  CHECK(machine.slow_bytes == 1 << 25);
  CHECK(machine.fast.read_gbps == o.fast.read_gbps);
  CHECK(machine.slow.write_gbps == o.slow.write_gbps);
  CHECK(machine.kernel_time == follower.time_model);
  const ca::policy::PlanJudge judge = ca::replay_judge(trace, shared_program, machine, follower);
  const auto redl_at = [&](std::uint64_t limit) {
    plan::RedlOptions r;
    r.fast_limit = limit;
    r.min_bytes = 0;
    return plan::redl_autotm_plan(program, costs, r);
  };
  // A plan keeping everything in DRAM is judged at the all-fast replay's
  // time; one that holds a third of the peak there, slower.
  ca::Runtime all_fast({ca::virtual_device(1 << 24, "fast"), ca::virtual_device(1 << 24, "slow")},
                       ca::policy::Registry::builtin().make("all-fast"));
  const double all_fast_seconds = ca::steady_iteration(ca::replay(*trace, all_fast, {o.fast, o.slow})).seconds;
  const double everything_in_dram = judge(redl_at(program.max_live()));
  CHECK(everything_in_dram == doctest::Approx(all_fast_seconds));
  CHECK(judge(redl_at(program.max_live() / 3)) > everything_in_dram * 1.05);
  CHECK(machine.mover_threads == ca::MoverOptions{}.threads);  // the runtime's default
  // The capacity planner has ReDL's candidates judged so.
  const ca::CapacityPlan capacity =
      ca::plan_capacity(*trace, program, ca::replayed_footprint(*trace), capacity_plan_options({0.4}, {"redl"}));
  REQUIRE(capacity.points.size() == 1);
  CHECK(capacity.points[0].policy == "redl");
  test::check_contains(capacity.points[0].note, "judged");

  // AutoTM's ILP takes no judge; empty tiers and bad bandwidths are named.
  test::check_contains(test::invalid_argument_of([&] {
                         (void)ca::replay_judge(
                             trace, shared_program, machine,
                             ca::policy::Registry::builtin().describe("autotm-sync").planned_options().value());
                       }),
                       "no planner hook");
  test::check_contains(test::invalid_argument_of([&] {
                         (void)ca::replay_judge(trace, shared_program, {0, 1 << 24, o.fast, o.slow, nullptr}, follower);
                       }),
                       "fast tier has 0 bytes");
  test::check_contains(
      test::invalid_argument_of([&] {
        (void)ca::replay_judge(trace, shared_program, {1 << 24, 1 << 24, o.fast, {"optane", 0, 10}, nullptr}, follower);
      }),
      "tier 'optane' reads at 0");
  ca::ReplayJudgeMachine no_mover = machine;
  no_mover.mover_threads = 0;
  test::check_contains(
      test::invalid_argument_of([&] { (void)ca::replay_judge(trace, shared_program, no_mover, follower); }),
      "the mover has 0 threads");
  test::check_contains(
      test::invalid_argument_of([&] { (void)ca::replay_judge(nullptr, shared_program, machine, follower); }),
      "must not be null");
}

TEST_CASE("replay judge: the judge's runtime has the run's mover threads") {
  // x is written, then written back beside k1 while y is brought in beside
  // k2 for k3 (s, small, stays in DRAM): on one mover thread the copy in
  // waits for the write-back the thread has started.
  using plan::StepKind;
  const std::vector<plan::ProgramObject> objects{{1024 * KiB, true}, {1024 * KiB, true}, {4 * KiB, true}};
  const auto arg = [&](std::uint32_t o, ca::Access access) { return plan::ProgramArg{o, objects[o].bytes, access}; };
  const std::vector<plan::ProgramKernel> kernels{{"k0", {arg(0, ca::Access::write)}},
                                                 {"k1", {arg(2, ca::Access::read)}},
                                                 {"k2", {arg(2, ca::Access::read)}},
                                                 {"k3", {arg(1, ca::Access::read)}},
                                                 {"k4", {arg(2, ca::Access::read)}}};
  std::vector<plan::ProgramStep> steps;
  for (std::uint32_t k = 0; k < kernels.size(); ++k) steps.push_back({StepKind::kernel, k});
  const plan::Program program(objects, kernels, steps);
  plan::MovePlan handmade;
  handmade.in_fast = {{true}, {true}, {true}, {true}, {true}};
  handmade.moves = {{.object = 0, .kernel = 1, .to_fast = false, .asynchronous = true},
                    {.object = 1, .kernel = 2, .to_fast = true, .asynchronous = true},
                    {.object = 1, .kernel = 4, .to_fast = false, .asynchronous = true},
                    {.object = 0, .kernel = 4, .to_fast = true, .asynchronous = true}};
  const auto trace = std::make_shared<const ca::Trace>(program.to_trace(4));
  const auto shared_program = std::make_shared<const plan::Program>(program);
  const ca::CapacityPlanOptions o = capacity_plan_options({1.0}, {"all-fast"});
  ca::policy::AutotmPolicyOptions follower = ca::policy::Registry::builtin().describe("redl").planned_options().value();
  follower.fast_tier = {o.fast.read_gbps, o.fast.write_gbps};
  follower.slow_tier = {o.slow.read_gbps, o.slow.write_gbps};
  follower.log = [](const std::string&) {};
  ca::ReplayJudgeMachine machine = ca::ReplayJudgeMachine::as_planned(1 << 24, 1 << 25, follower);
  machine.mover_threads = 2;
  const double two_threads = ca::replay_judge(trace, shared_program, machine, follower)(handmade);
  machine.mover_threads = 1;
  const double one_thread = ca::replay_judge(trace, shared_program, machine, follower)(handmade);
  CHECK(one_thread > two_threads);
}

TEST_CASE("capacity answer: the smallest fast tier within the bound, its fastest policy, priced") {
  ca::CapacityPlan plan;
  plan.footprint = 100'000'000'000;  // 100 GB
  plan.all_fast_seconds = 10;
  const auto point = [](std::string policy, double fraction, std::optional<double> slowdown, std::uint64_t slow) {
    ca::CapacityPoint p;
    p.policy = std::move(policy);
    p.fraction = fraction;
    p.fast_bytes = static_cast<std::uint64_t>(fraction * 100e9);
    if (slowdown) {
      p.seconds = 10 * *slowdown;
      p.slowdown = *slowdown;
    }
    p.slow_peak = slow;
    return p;
  };
  plan.points = {point("a", 0.1, 1.50, 90'000'000'000), point("b", 0.1, std::nullopt, 0),
                 point("a", 0.2, 1.09, 80'000'000'000), point("b", 0.2, 1.05, 85'000'000'000),
                 point("a", 0.5, 1.01, 50'000'000'000), point("b", 0.5, 1.00, 50'000'000'000)};
  const ca::MemoryPrices prices = ca::MemoryPrices::defaults();
  const ca::CapacityAnswer answer = ca::answer_capacity(plan, 1.10, prices, "dram", "optane");
  REQUIRE(answer.found);
  CHECK(answer.policy == "b");  // at 20%, the faster of the two within 1.10x
  CHECK(answer.fraction == 0.2);
  CHECK(answer.fast_bytes == 20'000'000'000);
  CHECK(answer.slow_bytes == 85'000'000'000);
  CHECK(answer.cost_dollars == doctest::Approx(20 * 16.61 + 85 * 7.85));
  CHECK(answer.all_fast_cost_dollars == doctest::Approx(100 * 16.61));

  const ca::CapacityAnswer strict = ca::answer_capacity(plan, 1.0, prices, "dram", "optane");
  REQUIRE(strict.found);
  CHECK(strict.policy == "b");
  CHECK(strict.fraction == 0.5);

  plan.points.resize(2);
  const ca::CapacityAnswer none = ca::answer_capacity(plan, 1.10, prices, "dram", "optane");
  CHECK_FALSE(none.found);
  test::check_contains(none.reason, "no policy is within 1.10x of all-fast");
  CHECK_THROWS_AS((void)ca::answer_capacity(plan, 0.9, prices, "dram", "optane"), ca::invalid_argument);
  CHECK_THROWS_AS((void)ca::answer_capacity(plan, 1.1, prices, "dram", "hbm"), ca::invalid_argument);
}

TEST_CASE("memory prices: AutoTM's Table 2 by default, overridden by a file, bad entries refused by name") {
  const ca::MemoryPrices defaults = ca::MemoryPrices::defaults();
  CHECK(defaults.dollars_per_gb("dram") == 16.61);
  CHECK(defaults.dollars_per_gb("optane") == 7.85);
  CHECK(defaults.dollars_per_gb("cxl") == 16.61);
  CHECK(defaults.cost("optane", 2'000'000'000) == doctest::Approx(15.70));

  const ca::MemoryPrices mine = ca::MemoryPrices::from_json(R"({"cxl": 9.5, "hbm": 40})");
  CHECK(mine.dollars_per_gb("cxl") == 9.5);
  CHECK(mine.dollars_per_gb("hbm") == 40);
  CHECK(mine.dollars_per_gb("dram") == 16.61);  // rows not given keep the defaults

  const auto refused = [](const std::string& text, const std::string& part) {
    try {
      (void)ca::MemoryPrices::from_json(text);
      FAIL("accepted prices that should be refused: " << text);
    } catch (const ca::invalid_argument& e) {
      test::check_contains(e.what(), part);
    }
  };
  refused(R"({"dram": -1})", "memory prices JSON: dram: must be a price in dollars per GB > 0, not -1");
  refused(R"({"dram": "cheap"})", "dram: must be a price in dollars per GB > 0");
  refused(R"([1, 2])", "must be an object");
  refused("dram=16", "is not JSON");
  // Found by fuzz/fuzz_json_readers: a number too large for a double is not
  // a parse error to nlohmann::json but out_of_range; it escaped.
  refused(R"({"dram": 16.77E77677})", "is not JSON");
  try {
    (void)defaults.dollars_per_gb("hbm");
    FAIL("priced a tier it does not know");
  } catch (const ca::invalid_argument& e) {
    test::check_contains(e.what(), "no memory price for tier 'hbm'; priced: cxl, dram, optane");
  }
  CHECK_THROWS_AS((void)ca::MemoryPrices::load("/nonexistent/prices.json"), ca::heap_error);
}
