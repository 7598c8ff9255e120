// The auto policy (policy/auto_policy.hpp): it ranks the candidates by its
// model, tries the top few and the better in-place one, keeps the fastest,
// decides again on a drift or another program, and says what it did; every
// byte the program stored survives the trials' switches. Iteration times
// come from a clock the test drives by the policy running, so that what is
// decided does not hang on the machine's speed.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <ctime>
#include <future>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "switched_program.hpp"
#include "test_support.hpp"

namespace ca = cachedarrays;

namespace {

// An auto policy in a runtime running the switched program, each of its
// iterations taking the time `cost` gives for the policy that runs it.
struct AutoRun {
  std::map<std::string, double> cost;
  double clock = 0;
  std::vector<std::string> lines;
  ca::policy::AutoPolicy* chooser = nullptr;
  std::unique_ptr<ca::Runtime> rt;
  std::unique_ptr<test::SwitchedProgram> program;

  AutoRun(std::map<std::string, double> costs, ca::policy::AutoPolicyOptions options) : cost(std::move(costs)) {
    options.clock = [this] { return clock; };
    options.log = [this](const std::string& line) { lines.push_back(line); };
    auto policy = std::make_unique<ca::policy::AutoPolicy>(std::move(options));
    chooser = policy.get();
    rt = std::make_unique<ca::Runtime>(
        test::two_tiers(test::SwitchedProgram::footprint / 3, 3 * test::SwitchedProgram::footprint), std::move(policy));
    rt->set_profile_iterations(1);
    program = std::make_unique<test::SwitchedProgram>(*rt);
  }

  // `n` iterations, the clock moved by the running policy's cost after each.
  void run(int n) {
    for (int i = 0; i < n; ++i) {
      program->iteration();
      clock += cost.at(chooser->running());
    }
  }

  // Iterations until the policy has made `decisions` decisions, at most `at_most`.
  void run_until_decided(std::uint32_t decisions, int at_most) {
    for (int i = 0; i < at_most && decision().decisions < decisions; ++i) run(1);
  }

  // Iterations until `name` has been measured and the trials decided, at
  // most `at_most`: a planner is tried once its model answers, which on a
  // loaded machine may come after the others' trials.
  void run_until_measured(const std::string& name, int at_most) {
    const auto measured_now = [&] {
      for (const auto& c : decision().ranked) {
        if (c.name == name) return c.measured_seconds.has_value();
      }
      return false;
    };
    for (int i = 0; i < at_most && !measured_now(); ++i) run(1);
  }

  [[nodiscard]] const ca::policy::AutoDecision& decision() const { return chooser->decision(); }
};

// Iterations a test waits for the model's answer, a hang guard only: the
// model's thread runs at the lowest priority, and on a loaded machine it may
// wait behind every other thread for a long while.
constexpr int model_patience = 200000;

ca::policy::AutoPolicyOptions options_of(std::vector<std::string> candidates, std::size_t trials = 2) {
  ca::policy::AutoPolicyOptions o;
  o.candidates = std::move(candidates);
  o.trials = trials;
  return o;
}

// Settles after 4 iterations and decides again after 2 drifted ones.
ca::policy::AutoPolicyOptions quick_to_drift() {
  ca::policy::AutoPolicyOptions o = options_of({"ca-lm", "ca-lma"});
  o.min_settled = 4;
  o.drift_iterations = 2;
  return o;
}

const std::map<std::string, double> iteration_costs{
    {"ca-lm", 1.0}, {"ca-lma", 0.5}, {"ca-lmp", 0.9}, {"first-touch", 0.8}, {"all-slow", 2.0}};

// A model that answers `modeled` seconds for each candidate. With
// `released`, a call first waits until the test releases it: every call, or
// only those that model `only_for`.
ca::policy::CandidateModel fixed_model(std::map<std::string, double> modeled,
                                       std::optional<std::shared_future<void>> released = std::nullopt,
                                       std::string only_for = "") {
  return [modeled = std::move(modeled), released = std::move(released), only_for = std::move(only_for)](
             const ca::plan::Program&, const std::vector<std::string>& candidates, std::uint64_t) {
    if (released &&
        (only_for.empty() || std::find(candidates.begin(), candidates.end(), only_for) != candidates.end())) {
      (void)released->wait_for(std::chrono::minutes(5));  // a hang guard only
    }
    std::vector<std::optional<double>> out;
    for (const std::string& c : candidates) out.emplace_back(modeled.at(c));
    return out;
  };
}

std::optional<double> measured(const ca::policy::AutoDecision& d, const std::string& name) {
  for (const auto& c : d.ranked) {
    if (c.name == name) return c.measured_seconds;
  }
  return std::nullopt;
}

}  // namespace

TEST_CASE("auto policy: without a model it tries the candidates in the order given and keeps the fastest") {
  AutoRun run(iteration_costs, options_of({"ca-lm", "ca-lma", "ca-lmp"}));
  run.run(1);
  CHECK(run.chooser->running() == "ca-lm");  // before the program
  CHECK(run.decision().decisions == 0);
  run.run(14);
  const ca::policy::AutoDecision& d = run.decision();
  REQUIRE(d.decisions == 1);
  // The top two, and the first in-place candidate given: first-touch (all-slow,
  // unmodeled, is not close to anything).
  CHECK(d.tried == std::vector<std::string>{"ca-lm", "ca-lma", "first-touch"});
  CHECK(d.chosen == "ca-lma");
  CHECK(run.chooser->running() == "ca-lma");
  CHECK(measured(d, "ca-lma") == doctest::Approx(0.5));
  CHECK(measured(d, "ca-lm") == doctest::Approx(1.0));
  CHECK(measured(d, "first-touch") == doctest::Approx(0.8));
  CHECK_FALSE(measured(d, "ca-lmp").has_value());
  CHECK(run.rt->stats().policy.policy_switches == 3);  // to ca-lma, to first-touch, back to ca-lma
  REQUIRE(run.lines.size() == 2);
  CHECK(run.lines[0].find("as given (not modeled)") != std::string::npos);
  CHECK(run.lines[1].find("chose ca-lma") != std::string::npos);
  CHECK(run.lines[1].find("CACHEDARRAYS_POLICY=ca-lma") != std::string::npos);
  run.run(5);
  CHECK(run.decision().decisions == 1);  // settled: nothing drifted
  run.program->check_weights();
}

TEST_CASE(
    "auto policy: the model ranks the candidates on a thread of its own; the in-place one it puts close is "
    "tried too") {
  ca::policy::AutoPolicyOptions o = options_of({"ca-lm", "ca-lma", "ca-lmp"}, 1);
  // What the model was given, checked once it has answered (its own thread
  // makes no assertion).
  auto given = std::make_shared<std::pair<std::size_t, std::uint64_t>>();
  o.model = [given](const ca::plan::Program& program, const std::vector<std::string>& candidates, std::uint64_t fast) {
    *given = {program.kernels().size(), fast};
    const std::map<std::string, double> modeled{
        {"ca-lm", 3.0}, {"ca-lma", 2.0}, {"ca-lmp", 1.0}, {"first-touch", 1.2}, {"all-slow", 1.1}};
    std::vector<std::optional<double>> out;
    for (const std::string& c : candidates) out.emplace_back(modeled.at(c));
    return out;
  };
  AutoRun run(iteration_costs, std::move(o));
  // The model runs on its own thread: iterate until it has answered.
  run.run_until_decided(1, model_patience);
  const ca::policy::AutoDecision& d = run.decision();
  REQUIRE(d.decisions == 1);
  CHECK(given->first > 0);
  CHECK(given->second == test::SwitchedProgram::footprint / 3);
  REQUIRE(d.ranked.size() == 5);
  CHECK(d.ranked[0].name == "ca-lmp");
  CHECK(d.ranked[1].name == "all-slow");
  CHECK(d.ranked[2].name == "first-touch");
  // The top one, the better in-place one, and the other within 1.25x of the best.
  // ca-lm ran while the model ranked: timed then, when the model took an
  // iteration or more, and tried first.
  std::vector<std::string> tried{"ca-lmp", "all-slow", "first-touch"};
  if (measured(d, "ca-lm")) tried.insert(tried.begin(), "ca-lm");
  CHECK(d.tried == tried);
  CHECK(d.chosen == "first-touch");
  CHECK(d.ranked[0].modeled_seconds == doctest::Approx(1.0));
  CHECK(run.lines.front().find("by the model") != std::string::npos);
  run.program->check_weights();
}

TEST_CASE("auto policy: the iterations the running policy runs while the model ranks on its thread are its trial") {
  ca::policy::AutoPolicyOptions o = options_of({"ca-lm", "ca-lma"}, 2);
  // The model answers only when the test lets it: the iterations before
  // are the running policy's (ca-lm's), timed.
  auto release = std::make_shared<std::promise<void>>();
  std::shared_future<void> released = release->get_future().share();
  o.model = [released](const ca::plan::Program&, const std::vector<std::string>& candidates, std::uint64_t) {
    (void)released.wait_for(std::chrono::minutes(5));  // a hang guard only
    std::vector<std::optional<double>> out;
    for (const std::string& c : candidates) out.emplace_back(c == "all-slow" ? 2.0 : c == "first-touch" ? 1.2 : 1.0);
    return out;
  };
  o.skip_above = 100;  // every trial runs: first-touch's too
  AutoRun run(iteration_costs, std::move(o));
  run.run(6);  // recorded, profiled, then ranking: ca-lm timed meanwhile
  CHECK(run.decision().decisions == 0);
  CHECK(run.rt->stats().policy.policy_switches == 0);
  release->set_value();
  run.run_until_decided(1, model_patience);
  const ca::policy::AutoDecision& d = run.decision();
  REQUIRE(d.decisions == 1);
  CHECK(d.tried == std::vector<std::string>{"ca-lm", "ca-lma", "first-touch"});
  CHECK(measured(d, "ca-lm") == doctest::Approx(1.0));
  CHECK(d.chosen == "ca-lma");
  // ca-lm's trial ran before the switches: to ca-lma, first-touch, ca-lma.
  CHECK(run.rt->stats().policy.policy_switches == 3);
  CHECK(run.lines.front().find("ca-lm timed while the model ranked") != std::string::npos);
  run.program->check_weights();
}

TEST_CASE("auto policy: each family's best-ranked candidate is tried before a family's second (model thread)") {
  // The model favours the policies that follow the program (as it does on a
  // program that departs from its recording); a reacting policy is tried too.
  ca::policy::AutoPolicyOptions o = options_of({"ca-lm", "ca-lma", "ca-lmpa", "ca-lmp", "redl"}, 3);
  o.model = fixed_model({{"ca-lma", 1.0},
                         {"ca-lmpa", 1.1},
                         {"redl", 1.2},
                         {"ca-lmp", 3.0},
                         {"ca-lm", 4.0},
                         {"first-touch", 5.0},
                         {"all-slow", 9.0}});
  o.skip_above = 100;  // every trial runs, however far off the model is
  std::map<std::string, double> measured_costs = iteration_costs;
  measured_costs["ca-lmpa"] = 0.6;
  measured_costs["redl"] = 0.7;
  measured_costs["ca-lmp"] = 0.3;
  AutoRun run(measured_costs, std::move(o));
  run.run_until_measured("redl", model_patience);
  const ca::policy::AutoDecision& d = run.decision();
  REQUIRE(d.decisions >= 1);
  // redl, a planner, is modeled after the others and tried when it is: its
  // place in the order depends on when its model answers.
  std::vector<std::string> tried{"ca-lma", "ca-lmp", "first-touch", "redl"};
  if (measured(d, "ca-lm")) tried.insert(tried.begin(), "ca-lm");
  std::vector<std::string> got = d.tried;
  std::sort(tried.begin(), tried.end());
  std::sort(got.begin(), got.end());
  CHECK(got == tried);
  CHECK_FALSE(measured(d, "ca-lmpa").has_value());  // lookahead's second
  CHECK(d.chosen == "ca-lmp");
}

TEST_CASE("auto policy: the planners, modeled after the trials began, are tried once modeled (model thread)") {
  ca::policy::AutoPolicyOptions o = options_of({"ca-lm", "ca-lma", "redl"}, 2);
  // The planners' stage answers only when the test lets it.
  auto release = std::make_shared<std::promise<void>>();
  std::shared_future<void> released = release->get_future().share();
  o.model = fixed_model({{"ca-lm", 1.0}, {"ca-lma", 0.5}, {"redl", 0.4}, {"first-touch", 0.6}, {"all-slow", 2.0}},
                        released, "redl");
  std::map<std::string, double> costs = iteration_costs;
  costs["redl"] = 0.3;
  AutoRun run(costs, std::move(o));
  run.run_until_decided(1, model_patience);
  {
    const ca::policy::AutoDecision& d = run.decision();
    REQUIRE(d.decisions == 1);
    // Decided among the quick stage's: redl, still planning, has no trial yet.
    CHECK(std::find(d.tried.begin(), d.tried.end(), "redl") == d.tried.end());
    CHECK(d.chosen == "ca-lma");
    CHECK(run.lines.front().find("redl (planning)") != std::string::npos);
  }
  release->set_value();
  run.run_until_decided(2, model_patience);
  const ca::policy::AutoDecision& d = run.decision();
  REQUIRE(d.decisions == 2);
  CHECK(std::find(d.tried.begin(), d.tried.end(), "redl") != d.tried.end());
  CHECK(d.chosen == "redl");
  CHECK(measured(d, "ca-lma") == doctest::Approx(0.5));  // the decided trials, kept to decide against
  bool said = false;
  for (const std::string& line : run.lines) said = said || line.find("the planners modeled") != std::string::npos;
  CHECK(said);
  run.program->check_weights();
}

TEST_CASE(
    "auto policy: a planner whose plan would stall the program waits until the plan is a small share of the run "
    "(model thread)") {
  ca::policy::AutoPolicyOptions o = options_of({"ca-lm", "ca-lma", "redl"}, 2);
  o.plan_share = 0.001;  // a plan of at least 0.05 s waits until the run has lasted 50 s (of the test's clock)
  constexpr double plan_cpu_seconds = 0.05;
  const std::map<std::string, double> modeled{
      {"ca-lm", 1.0}, {"ca-lma", 0.5}, {"redl", 0.4}, {"first-touch", 0.6}, {"all-slow", 2.0}};
  // The planners' stage answers when the test lets it, after burning that
  // much CPU time on the model's thread, as a plan does; the test then waits
  // for it, so that it answers early in the run (by the test's clock).
  auto release = std::make_shared<std::promise<void>>();
  std::shared_future<void> released = release->get_future().share();
  o.model = [modeled, released](const ca::plan::Program&, const std::vector<std::string>& candidates, std::uint64_t) {
    const bool planners = std::find(candidates.begin(), candidates.end(), "redl") != candidates.end();
    if (planners) {
      (void)released.wait_for(std::chrono::minutes(5));  // a hang guard only
      const auto thread_cpu = [] {
        timespec t{};
        (void)clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
        return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) / 1e9;
      };
      const double began = thread_cpu();
      while (thread_cpu() - began < plan_cpu_seconds) {
      }
    }
    std::vector<std::optional<double>> out;
    for (const std::string& c : candidates) out.emplace_back(modeled.at(c));
    return out;
  };
  std::map<std::string, double> costs = iteration_costs;
  costs["redl"] = 0.3;
  AutoRun run(costs, std::move(o));
  // Lets the planners' stage answer when the test ends, whatever ended it:
  // the runtime's end waits for the model's thread.
  struct Release {
    std::shared_ptr<std::promise<void>> promise;
    bool done = false;
    void now() {
      if (!std::exchange(done, true)) promise->set_value();
    }
    ~Release() { now(); }
  } releaser{release};
  // The first stage (no planner) is waited for between iterations, so
  // that however slowly a loaded or sanitized machine runs the model's
  // thread, the first decision comes a few iterations of the test's clock
  // into the run.
  for (int i = 0; i < model_patience && run.decision().decisions < 1; ++i) {
    run.run(1);
    run.chooser->wait_for_ranking();
  }
  REQUIRE(run.decision().decisions == 1);
  REQUIRE(run.clock < plan_cpu_seconds / 0.001);
  releaser.now();
  // The planners' answer is waited for too: the test's clock stands still
  // however long a loaded machine keeps the model's thread from running.
  run.chooser->wait_for_planners_answer();
  std::optional<double> redl_began;  // the test's clock when redl first ran
  for (int i = 0; i < model_patience && run.decision().decisions < 2; ++i) {
    if (!redl_began && run.chooser->running() == "redl") redl_began = run.clock;
    run.run(1);
  }
  const ca::policy::AutoDecision& d = run.decision();
  REQUIRE(d.decisions == 2);
  REQUIRE(redl_began.has_value());
  // Its trial began only once the plan was at most 0.1% of the run so far.
  CHECK(*redl_began >= plan_cpu_seconds / 0.001);
  CHECK(d.chosen == "redl");
  bool waited = false;
  for (const std::string& line : run.lines)
    waited = waited || line.find("redl waits until its plan") != std::string::npos;
  CHECK(waited);
  run.program->check_weights();
}

TEST_CASE("auto policy: an in-place candidate chosen after other trials moved data runs again before it is kept") {
  ca::policy::AutoPolicyOptions o = options_of({"ca-lm", "ca-lma"}, 2);
  o.skip_above = 100;  // every trial runs
  // The model puts first-touch first: its trial runs before ca-lma's.
  o.model = fixed_model({{"first-touch", 0.3}, {"ca-lma", 0.5}, {"ca-lm", 0.6}, {"all-slow", 2.0}});
  std::map<std::string, double> costs = iteration_costs;
  costs["first-touch"] = 0.4;
  AutoRun run(costs, std::move(o));
  // first-touch keeps what it takes over: after ca-lma's trial moved the
  // data, its iterations take 0.9 s, not the 0.4 s its trial measured.
  for (int i = 0; i < model_patience && run.decision().decisions == 0; ++i) {
    if (run.chooser->running() == "ca-lma") run.cost["first-touch"] = 0.9;
    run.run(1);
  }
  const ca::policy::AutoDecision& d = run.decision();
  REQUIRE(d.decisions == 1);
  CHECK(std::count(d.tried.begin(), d.tried.end(), "first-touch") == 2);
  CHECK(d.chosen == "ca-lma");
  CHECK(measured(d, "first-touch") == doctest::Approx(0.9));  // its second trial's
  run.program->check_weights();
}

TEST_CASE("auto policy: a trial the measurements already rule out is not run (model thread)") {
  ca::policy::AutoPolicyOptions o = options_of({"ca-lm", "ca-lma"}, 2);
  o.model = fixed_model({{"ca-lma", 0.5}, {"ca-lm", 0.6}, {"first-touch", 0.8}, {"all-slow", 0.9}});
  AutoRun run(iteration_costs, std::move(o));
  run.run_until_decided(1, model_patience);
  const ca::policy::AutoDecision& d = run.decision();
  REQUIRE(d.decisions == 1);
  CHECK(d.chosen == "ca-lma");
  // first-touch, modeled 0.8 s, cannot win once ca-lma, modeled 0.5 s, is
  // the fastest measured (1.5 x 0.5 = 0.75): skipped, not tried.
  CHECK(std::find(d.tried.begin(), d.tried.end(), "first-touch") == d.tried.end());
  CHECK(std::find(d.tried.begin(), d.tried.end(), "ca-lma") != d.tried.end());
  for (const auto& c : d.ranked) {
    CAPTURE(c.name);
    CHECK(c.skipped == (c.name == "first-touch"));
  }
  CHECK_FALSE(measured(d, "first-touch").has_value());
  CHECK(d.why.find("not tried") != std::string::npos);
  CHECK(d.why.find("first-touch") != std::string::npos);
  run.program->check_weights();
}

TEST_CASE("auto policy: a trial is skipped only by the model's least error on a measured candidate") {
  ca::policy::AutoPolicyOptions o = options_of({"ca-lm", "ca-lma"}, 2);
  // The model answers once ca-lm has been timed: measured 1.0 s, modeled
  // 2.0 s, the model twice too slow about it.
  auto release = std::make_shared<std::promise<void>>();
  std::shared_future<void> released = release->get_future().share();
  o.model = fixed_model({{"ca-lm", 2.0}, {"ca-lma", 0.5}, {"first-touch", 0.8}, {"all-slow", 3.0}}, released);
  std::map<std::string, double> costs = iteration_costs;
  costs["first-touch"] = 0.4;
  AutoRun run(costs, std::move(o));
  run.run(6);
  release->set_value();
  run.run_until_decided(1, model_patience);
  const ca::policy::AutoDecision& d = run.decision();
  REQUIRE(d.decisions == 1);
  // first-touch is modeled 1.6x ca-lma (measured 0.5 s, as modeled); scaled by
  // the model's least error (ca-lm's, 0.5) it is 0.4 s, under 1.5 x 0.5: tried.
  CHECK(d.tried == std::vector<std::string>{"ca-lm", "ca-lma", "first-touch"});
  CHECK(d.chosen == "first-touch");
  run.program->check_weights();
}

TEST_CASE("auto policy: a trial far slower than one before it ends after its first iteration") {
  std::map<std::string, double> slow_ca_lmp = iteration_costs;
  slow_ca_lmp["ca-lmp"] = 5.0;
  slow_ca_lmp["first-touch"] = 0.7;  // within 1.5x of ca-lma: a full trial
  AutoRun run(slow_ca_lmp, options_of({"ca-lma", "ca-lmp"}));
  run.run(15);
  const ca::policy::AutoDecision& d = run.decision();
  REQUIRE(d.decisions == 1);
  CHECK(d.tried == std::vector<std::string>{"ca-lma", "ca-lmp", "first-touch"});
  for (const auto& c : d.ranked) {
    CAPTURE(c.name);
    CHECK(c.cut == (c.name == "ca-lmp"));
  }
  CHECK(measured(d, "ca-lmp") == doctest::Approx(5.0));
  CHECK(d.chosen == "ca-lma");
  run.program->check_weights();
}

TEST_CASE("auto policy: a drift beyond the measured noise band decides again, no sooner than it may") {
  AutoRun run(iteration_costs, quick_to_drift());
  run.run_until_decided(1, 40);
  REQUIRE(run.decision().chosen == "ca-lma");
  run.run(6);  // the noise band is measured, then steady iterations
  CHECK(run.decision().decisions == 1);
  // The program's iterations now take three times as long under ca-lma.
  run.cost["ca-lma"] = 1.5;
  run.run(1);
  CHECK(run.decision().decisions == 1);  // one drifted iteration is noise
  run.run_until_decided(2, 12);
  CHECK(run.decision().decisions == 2);
  CHECK(run.decision().chosen == "first-touch");
  bool said = false;
  for (const std::string& line : run.lines) said = said || line.find("deciding again") != std::string::npos;
  CHECK(said);
  run.program->check_weights();
}

TEST_CASE("auto policy: a choice that settles slower than its trial measured decides again") {
  AutoRun run(iteration_costs, quick_to_drift());
  run.run_until_decided(1, 40);
  REQUIRE(run.decision().chosen == "ca-lma");
  // From its first settled iteration on, ca-lma's take 1.6x its trial's
  // 0.5 s, steadily: no drift within the band it measures, but a choice that
  // did not hold.
  run.cost["ca-lma"] = 0.8;
  run.run_until_decided(2, 12);
  CHECK(run.decision().decisions == 2);
  bool said = false;
  for (const std::string& line : run.lines) said = said || line.find("slower than its trial") != std::string::npos;
  CHECK(said);
  run.program->check_weights();
}

TEST_CASE("auto policy: after a drift the model rules no trial out (model thread)") {
  ca::policy::AutoPolicyOptions o = quick_to_drift();
  o.model = fixed_model({{"ca-lma", 0.5}, {"ca-lm", 0.6}, {"first-touch", 1.0}, {"all-slow", 1.1}});
  AutoRun run(iteration_costs, std::move(o));
  run.run_until_decided(1, model_patience);
  REQUIRE(run.decision().chosen == "ca-lma");
  for (const auto& c : run.decision().ranked) {
    if (c.name == "first-touch") REQUIRE(c.skipped);  // modeled 2x ca-lma
  }
  run.run(6);
  // The program now departs from its recording: ca-lma's iterations take
  // 3x. ca-lm (1.0 s) is the fastest trial then, and the model still puts
  // first-touch 1.67x it; yet first-touch is measured, and wins.
  run.cost["ca-lma"] = 1.5;
  run.run_until_decided(2, 20);
  const ca::policy::AutoDecision& d = run.decision();
  REQUIRE(d.decisions == 2);
  CHECK(std::find(d.tried.begin(), d.tried.end(), "first-touch") != d.tried.end());
  CHECK(d.chosen == "first-touch");
  run.program->check_weights();
}

TEST_CASE("auto policy: a change far beyond noise right after a decision decides again before the noise window ends") {
  ca::policy::AutoPolicyOptions o = options_of({"ca-lm", "ca-lma"});
  o.min_settled = 10;
  o.drift_iterations = 3;
  AutoRun run(iteration_costs, std::move(o));
  run.run_until_decided(1, 40);
  REQUIRE(run.decision().chosen == "ca-lma");
  run.run(2);
  CHECK(run.decision().decisions == 1);
  // The program enters another phase: ca-lma's iterations take 3x its trial's.
  const auto deciding_again = [&] {
    return std::any_of(run.lines.begin(), run.lines.end(), [](const std::string& line) {
      return line.find("slower than its trial") != std::string::npos &&
             line.find("deciding again") != std::string::npos;
    });
  };
  run.cost["ca-lma"] = 1.5;
  run.run(3);                     // an iteration is timed when the next begins: two seen
  CHECK_FALSE(deciding_again());  // two such iterations are not yet a change
  run.run(1);                     // the third is: 6 iterations into a window of 10
  CHECK(deciding_again());
  run.run_until_decided(2, 40);
  CHECK(run.decision().decisions == 2);
  run.program->check_weights();
}

TEST_CASE("auto policy: a load that comes and goes does not keep the program in trials") {
  AutoRun run(iteration_costs, quick_to_drift());
  run.run_until_decided(1, 40);
  REQUIRE(run.decision().decisions == 1);
  // Every policy's iterations take three times as long in every other
  // stretch of five: each drift doubles the window before the next.
  const std::map<std::string, double> quiet = run.cost;
  for (int i = 0; i < 200; ++i) {
    for (auto& [name, seconds] : run.cost) seconds = quiet.at(name) * ((i / 5) % 2 == 0 ? 1.0 : 3.0);
    run.run(1);
  }
  CHECK(run.decision().decisions >= 2);  // the first drift re-decides
  CHECK(run.decision().decisions <= 6);  // windows of 8, 16, 32, 64, 128 iterations, at most
  run.program->check_weights();
}

TEST_CASE("auto policy: another program is another decision") {
  AutoRun run(iteration_costs, options_of({"ca-lm", "ca-lma"}));
  run.run_until_decided(1, 40);
  REQUIRE(run.decision().decisions == 1);
  run.cost["first-touch"] = 0.1;
  run.rt->record_program();
  run.run_until_decided(2, 40);
  CHECK(run.decision().decisions == 2);
  CHECK(run.decision().chosen == "first-touch");
  run.program->check_weights();
}

TEST_CASE("auto policy: a program that never begins an iteration runs under CA:LM") {
  ca::policy::AutoPolicyOptions o;
  o.log = [](const std::string& line) { FAIL("nothing to decide, yet: " << line); };
  auto policy = std::make_unique<ca::policy::AutoPolicy>(std::move(o));
  ca::policy::AutoPolicy& chooser = *policy;
  ca::Runtime rt(test::two_tiers(64 * test::KiB, 1 << 20), std::move(policy));
  std::vector<ca::CachedArray<std::byte>> arrays;
  for (std::uint64_t seed = 1; seed <= 8; ++seed) {
    arrays.push_back(rt.array<std::byte>(16 * test::KiB));
    test::fill(arrays.back(), seed);
  }
  for (std::uint64_t seed = 1; seed <= 8; ++seed) CHECK(test::holds(arrays[seed - 1], seed));
  CHECK(chooser.running() == "ca-lm");
  CHECK(rt.policy_name() == "auto");
  CHECK(rt.program() == nullptr);
}

TEST_CASE("auto policy: the runtime records the program it asks for, and the switches are traced") {
  AutoRun run(iteration_costs, options_of({"ca-lm", "ca-lma"}));
  ca::Trace& trace = run.rt->start_trace();
  run.run(2);
  CHECK(run.rt->program() != nullptr);  // recorded without record_program()
  run.run(12);
  REQUIRE(run.decision().decisions == 1);
  std::vector<std::string> switched;
  for (const ca::TraceEvent& e : trace.events()) {
    if (e.kind == ca::TraceKind::policy_switch) switched.push_back(trace.names().at(e.name));
  }
  CHECK(switched == std::vector<std::string>{"ca-lma", "first-touch", "ca-lma"});
  std::ostringstream csv;
  trace.write_csv(csv);
  CHECK(csv.str().find(",policy_switch,0,0,0,") != std::string::npos);
}

TEST_CASE("auto policy: options it cannot run are refused, saying why") {
  auto refused = [](ca::policy::AutoPolicyOptions o, const std::string& says) {
    CAPTURE(says);
    try {
      ca::policy::AutoPolicy policy(std::move(o));
      FAIL("accepted");
    } catch (const ca::invalid_argument& e) {
      CHECK(std::string(e.what()).find(says) != std::string::npos);
    }
  };
  ca::policy::AutoPolicyOptions o;
  o.iterations_per_trial = 1;
  refused(o, "give 2 or more");
  refused(options_of({"ca-lm", "no-such-policy"}), "no-such-policy");
  refused(options_of({"auto"}), "its own candidate");
  refused(options_of({"ca-lm"}, 0), "trials is 0");
  ca::policy::AutoPolicyOptions unsettled;
  unsettled.min_settled = 0;
  refused(unsettled, "min_settled is 0");
}

TEST_CASE("auto policy: the registry's auto ranks by the replay; no model replays auto itself") {
  const ca::policy::Registry registry = ca::policy::Registry::builtin();
  const ca::policy::PolicyDescriptor d = registry.describe("auto");
  CHECK(d.measures_candidates());
  CHECK(d.needs_program());
  CHECK(registry.make("auto")->name() == "auto");
  const std::vector<std::string> all = ca::all_policies();
  CHECK(std::find(all.begin(), all.end(), "auto") == all.end());
  // The umbrella header installed the replay model.
  CHECK(static_cast<bool>(ca::policy::default_candidate_model()));

  // A recorded program, modeled for two candidates at a third of its footprint.
  ca::Runtime rt(test::two_tiers(test::SwitchedProgram::footprint / 3, 3 * test::SwitchedProgram::footprint),
                 registry.make("ca-lm"));
  test::SwitchedProgram program(rt);
  program.iteration();
  rt.record_program();
  program.iteration();
  program.iteration();
  REQUIRE(rt.program() != nullptr);
  std::string errors;
  const std::vector<std::optional<double>> modeled = ca::model_policies(
      *rt.program(), {"first-touch", "all-slow"}, test::SwitchedProgram::footprint / 3, 1.0,
      [&](const std::string& policy, const std::string& why) { errors += policy + ": " + why + "; "; });
  CAPTURE(errors);
  REQUIRE(modeled.size() == 2);
  REQUIRE(modeled[0].has_value());
  REQUIRE(modeled[1].has_value());
  CHECK(*modeled[0] > 0);
  CHECK(*modeled[1] >= *modeled[0]);  // all in the slow tier is never faster than some in the fast one
  CHECK_THROWS_AS(
      (void)ca::model_point(ca::saved_program(*rt.program()).trace, *rt.program(), 1 << 20, "auto", 0.5, {}),
      ca::invalid_argument);
}

TEST_CASE("auto policy: reader threads read on through its trials and switches, every byte intact") {
  // The readers' kernels skip the lock under the policies that let them and
  // take it under the others; the trials change which while they read.
  AutoRun run(iteration_costs, options_of({"ca-lm", "ca-lma", "ca-lmp"}));
  constexpr int readers = 2;
  std::vector<ca::CachedArray<std::byte>> own;
  for (int t = 0; t < readers; ++t) {
    own.push_back(run.rt->array<std::byte>(8 * test::KiB));
    test::fill(own.back(), 500 + static_cast<std::uint64_t>(t));
  }
  std::atomic<bool> stop{false};
  std::atomic<int> bad_reads{0};
  std::atomic<std::uint64_t> reads{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < readers; ++t) {
    threads.emplace_back([&, t] {
      while (!stop.load(std::memory_order_relaxed)) {
        run.rt->kernel("read", ca::reads(own[static_cast<std::size_t>(t)]), [&](std::span<const std::byte> mine) {
          if (!test::holds(mine.data(), mine.size(), 500 + static_cast<std::uint64_t>(t))) bad_reads.fetch_add(1);
        });
        reads.fetch_add(1, std::memory_order_relaxed);
      }
    });
  }
  // Each iteration waits until the readers have read since the last one,
  // so that every switch overlaps their reads.
  std::uint64_t seen = 0;
  for (int i = 0; i < 40 && run.decision().decisions == 0; ++i) {
    while (reads.load(std::memory_order_relaxed) < seen + readers) std::this_thread::yield();
    seen = reads.load(std::memory_order_relaxed);
    run.run(1);
  }
  stop = true;
  for (std::thread& thread : threads) thread.join();
  CHECK(run.decision().decisions == 1);
  CHECK(run.rt->stats().policy.policy_switches >= 2);
  CHECK(bad_reads.load() == 0);
  run.program->check_weights();
  run.rt->manager().check_invariants(/*verify_contents=*/true);
}
