// The policy descriptors (policy/policy_descriptor.hpp, builtin_policies.hpp)
// and the registry that looks them up: what each built-in name says about
// its policy, the spellings the registry parses, the 2LM memory modes, and
// the options a factory takes.
#include <doctest/doctest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "test_support.hpp"

namespace ca = cachedarrays;
namespace policy = cachedarrays::policy;

namespace {

std::vector<std::string> descriptor_names(const policy::Registry& registry) {
  std::vector<std::string> names;
  for (const policy::PolicyDescriptor& d : registry.descriptors()) names.push_back(d.name());
  return names;
}

}  // namespace

TEST_CASE("policy descriptors: every built-in one has a summary; the paper's have a section") {
  const policy::Registry registry = policy::Registry::builtin();
  for (const policy::PolicyDescriptor& d : registry.descriptors()) {
    CAPTURE(d.name());
    CHECK(!d.summary().empty());
    CHECK(registry.contains(d.name()));
    CHECK(registry.description(d.name()) == d.summary());
  }
  for (const char* ours : {"hw-cache", "ca-lma", "ca-lmpa"}) CHECK(registry.describe(ours).section().empty());
  CHECK(registry.describe("ca-lm").section() == "003 §IV");
  CHECK(registry.describe("autotm-async").section() == "000 §7.1");
}

TEST_CASE("policy descriptors: the registry's order is the capacity planner's, the planned policies last") {
  const policy::Registry registry = policy::Registry::builtin();
  const std::vector<std::string> expected{
      "all-fast",     "all-slow",      "first-touch",    "hw-cache",    "2lm:m",        "ca",
      "ca-l",         "ca-lm",         "ca-lmp",         "ca-lma",      "ca-lmpa",      "planned",
      "planned-a",    "2lm",           "autotm-static",  "autotm-sync", "autotm-async", "autoswap:doa",
      "autoswap:aoa", "autoswap:wdoa", "autoswap:swdoa", "autoswap:bo", "redl"};
  // auto first (the default), then the policies it picks among, which are
  // what a model replays.
  std::vector<std::string> registered{"auto"};
  registered.insert(registered.end(), expected.begin(), expected.end());
  CHECK(descriptor_names(registry) == registered);
  CHECK(ca::all_policies() == expected);
  const std::vector<std::string> quick(expected.begin(), expected.begin() + 14);
  CHECK(ca::quick_policies() == quick);
}

TEST_CASE("policy descriptors: which built-in policies need a program, look ahead, take a plan, use the mover") {
  const policy::Registry registry = policy::Registry::builtin();
  const std::set<std::string> programmed{
      "auto",         "ca-lma",       "ca-lmpa",      "planned",       "planned-a",      "autotm-static", "autotm-sync",
      "autotm-async", "autoswap:doa", "autoswap:aoa", "autoswap:wdoa", "autoswap:swdoa", "autoswap:bo",   "redl"};
  const std::set<std::string> lookahead{"ca-lma", "ca-lmpa", "planned-a"};
  const std::set<std::string> offsets{"ca-lm", "ca-lmp", "ca-lma", "ca-lmpa", "planned", "planned-a"};
  const std::set<std::string> mover{"auto",           "ca-lma",       "ca-lmpa",      "planned-a",
                                    "autotm-async",   "autoswap:doa", "autoswap:aoa", "autoswap:wdoa",
                                    "autoswap:swdoa", "autoswap:bo",  "redl"};
  for (const policy::PolicyDescriptor& d : registry.descriptors()) {
    CAPTURE(d.name());
    CHECK(d.needs_program() == programmed.contains(d.name()));
    CHECK(d.takes_lookahead() == lookahead.contains(d.name()));
    CHECK(d.takes_offset_planner() == offsets.contains(d.name()));
    CHECK(d.uses_mover() == mover.contains(d.name()));
    CHECK(d.baseline() == (d.name() == "all-fast"));
    CHECK(d.plans_ahead() == d.planned_options().has_value());
    CHECK(d.measures_candidates() == (d.name() == "auto"));
  }
}

TEST_CASE("policy descriptors: the 2LM memory modes are described but are not policies") {
  const policy::Registry registry = policy::Registry::builtin();
  const policy::PolicyDescriptor measured = registry.describe("2lm:m");
  REQUIRE(measured.memory_mode().has_value());
  CHECK(measured.memory_mode()->retire_frees_at_once);
  CHECK_FALSE(measured.modeled_only());
  CHECK_FALSE(measured.needs_program());
  const policy::PolicyDescriptor modeled = registry.describe("2lm");
  REQUIRE(modeled.memory_mode().has_value());
  CHECK_FALSE(modeled.memory_mode()->retire_frees_at_once);
  CHECK(modeled.modeled_only());
  test::check_contains(test::invalid_argument_of([&] { (void)registry.make("2lm"); }), "modeled only");
  test::check_contains(test::invalid_argument_of([&] { (void)measured.make(); }), "memory-mode device");
  // Contained and described, but not among the names of policies make() creates.
  const std::vector<std::string> names = registry.names();
  CHECK(std::find(names.begin(), names.end(), "2lm") == names.end());
  CHECK(std::find(names.begin(), names.end(), "2lm:m") == names.end());
  CHECK(registry.contains("2lm:m"));
  for (const char* other : {"all-fast", "ca-lm", "redl"}) CHECK_FALSE(registry.describe(other).memory_mode());
}

TEST_CASE("policy descriptors: spellings the registry parses are described as their modes") {
  const policy::Registry registry = policy::Registry::builtin();
  const policy::PolicyDescriptor pl = registry.describe("ca-pl");
  CHECK(pl.name() == "ca-pl");
  CHECK(pl.make()->name() == "ca-lp");
  CHECK_FALSE(pl.needs_program());
  CHECK_FALSE(pl.takes_offset_planner());
  const policy::PolicyDescriptor mip = registry.describe("ca-lmp+mip");
  CHECK(mip.options().offsets == ca::plan::OffsetPlanner::mip);
  CHECK(mip.needs_program());
  CHECK(mip.make()->name() == "ca-lmp+mip");
  CHECK_FALSE(registry.contains("ca-pl"));
  CHECK_FALSE(registry.try_describe("ca-pl+mip").has_value());
  // A mode that cannot take the planner it names says why; an unknown name lists the valid ones.
  test::check_contains(test::invalid_argument_of([&] { (void)registry.describe("ca-l+mip"); }),
                       "needs local allocation (L) and at-once retires (M)");
  const std::string unknown = test::invalid_argument_of([&] { (void)registry.describe("lru"); });
  CHECK(unknown == test::invalid_argument_of([&] { (void)registry.make("lru"); }));
  test::check_contains(unknown, "unknown policy 'lru'");
  test::check_contains(unknown, "first-touch");
  CHECK_FALSE(registry.try_describe("autoswap:xyz").has_value());
}

TEST_CASE("policy descriptors: options given to make() replace the spelled ones") {
  const policy::Registry registry = policy::Registry::builtin();
  const policy::PolicyDescriptor lm = registry.describe("ca-lm");
  CHECK_FALSE(lm.needs_program());
  CHECK(lm.needs_program({.offsets = ca::plan::OffsetPlanner::smartpool}));
  CHECK(lm.make({.offsets = ca::plan::OffsetPlanner::smartpool})->name() == "ca-lm+smartpool");
  CHECK(registry.describe("planned").make({.offsets = ca::plan::OffsetPlanner::mip})->name() == "ca-lm+mip");
  CHECK(registry.describe("planned").make()->name() == "ca-lm+best-fit");
  const auto lma = registry.describe("ca-lma").make({.lookahead = policy::Lookahead{12, 0.5}});
  CHECK(lma->name() == "ca-lma");
  const std::optional<policy::AutotmPolicyOptions> bo =
      registry.describe("autoswap:doa").planned_options({.autoswap_score = ca::plan::AutoswapScore::bo});
  REQUIRE(bo.has_value());
  REQUIRE(bo->planner.has_value());
  CHECK(bo->planner->name == "autoswap:bo");
  // A mode without L and M refuses a plan.
  CHECK_THROWS_AS((void)registry.describe("ca").make({.offsets = ca::plan::OffsetPlanner::best_fit}),
                  ca::invalid_argument);
}

TEST_CASE("policy descriptors: a policy registered by name and factory needs nothing") {
  policy::Registry registry = policy::Registry::builtin();
  registry.add("mine", "test", [] { return std::make_unique<policy::FirstTouch>(); });
  const policy::PolicyDescriptor mine = registry.describe("mine");
  CHECK(mine.summary() == "test");
  CHECK(mine.section().empty());
  CHECK_FALSE(mine.needs_program());
  CHECK_FALSE(mine.plans_ahead());
  CHECK_FALSE(mine.memory_mode());
  CHECK(registry.make("mine")->name() == "first-touch");
  CHECK(registry.descriptors().back().name() == "mine");
  CHECK_THROWS_AS(registry.add(policy::PolicyDescriptor(policy::PolicyFacts{
                      .name = "ca-lm",
                      .factory = [](const policy::PolicyOptions&) { return std::make_unique<policy::FirstTouch>(); }})),
                  ca::invalid_argument);
  CHECK_THROWS_AS(policy::PolicyDescriptor(policy::PolicyFacts{.name = "no-factory"}), ca::invalid_argument);
}
