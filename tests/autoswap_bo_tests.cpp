// AutoSwap's fifth priority score, BO (plan/schedule/autoswap_bo.hpp, SmartPool/AutoSwap
// §IV-C, equation (3)): the standardised scores and their hand-computed
// combination; a unit weight vector plans as its single score and a
// negative one reverses it; each pick is the best by equation (3) with
// SWDOA standardised anew; scaling every time by 1000 changes no pick; the
// Gaussian process interpolates what it observed and its expected
// improvement; the Bayesian optimisation is never worse than the best
// single score, gives the plan its weights give, is the same for a seed,
// reports its progress, and penalises a plan over the limit; bad options
// say which value is wrong and what is allowed.
#include <doctest/doctest.h>

#include <Eigen/Core>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "autoswap_programs.hpp"
#include "cachedarrays/plan/detail/gaussian_process.hpp"
#include "cachedarrays/plan/schedule/autoswap.hpp"
#include "cachedarrays/plan/schedule/autoswap_bo.hpp"
#include "test_support.hpp"

namespace ca = cachedarrays;
using ca::plan::AutoswapBoOptions;
using ca::plan::AutoswapBoResult;
using ca::plan::AutoswapBoSource;
using ca::plan::AutoswapBoWeights;
using ca::plan::AutoswapCandidate;
using ca::plan::AutoswapOptions;
using ca::plan::AutoswapPlan;
using ca::plan::AutoswapScore;
using ca::plan::AutoswapScores;
using ca::plan::Program;
using ca::plan::TierCosts;
using test::autoswap::costs_of;
using test::autoswap::program_of;
using test::autoswap::random_program;

namespace {

using test::MB;

// A random program with its kernel times and copy bandwidths, and a limit
// below its peak (so that the selection has to pick).
struct AutoswapCase {
  Program program;
  TierCosts costs;
  AutoswapOptions options;
};

AutoswapCase random_case(test::Rng& rng, std::size_t min_objects, std::size_t max_objects, std::size_t min_kernels,
                         std::size_t max_kernels) {
  Program p = random_program(rng, rng.between(min_objects, max_objects), rng.between(min_kernels, max_kernels));
  std::vector<double> seconds;
  for (std::size_t k = 0; k < p.kernels().size(); ++k)
    seconds.push_back(static_cast<double>(rng.between(1, 100)) / 100);
  // 100-1000 bytes at 1-20 kB/s: copies of 5 ms to 1 s, as long as kernels
  // (10 ms to 1 s).
  TierCosts costs = costs_of(std::move(seconds), static_cast<double>(rng.between(1, 20)) * 1e-6,
                             static_cast<double>(rng.between(1, 20)) * 1e-6);
  AutoswapOptions o;
  o.min_bytes = 0;
  o.across_peak_only = rng.percent(70);
  const std::uint64_t peak = p.max_live();
  o.limit = peak > 1 ? rng.between(peak / 2, peak - 1) : 1;
  return {std::move(p), std::move(costs), o};
}

// A larger random program whose copies take 0.5 to 10 s, and a limit the
// selection can reach (between the least peak the swaps give and the peak
// without them): most orders of the swaps leave some wait.
AutoswapCase reachable_case(test::Rng& rng) {
  AutoswapCase c = random_case(rng, 15, 30, 30, 60);
  c.costs.to_slow_gbps /= 10;
  c.costs.to_fast_gbps /= 10;
  AutoswapOptions all = c.options;
  all.limit = 1;
  const std::uint64_t lowest = ca::plan::autoswap_plan(c.program, c.costs, all).peak;
  const std::uint64_t peak = c.program.max_live();
  c.options.limit = lowest < peak ? rng.between(lowest, peak - 1) : peak;
  return c;
}

// The picks of a plan: (object, gap) in the order the selection made them.
std::vector<std::pair<std::uint32_t, std::uint32_t>> picks(const AutoswapPlan& plan) {
  std::vector<std::pair<std::uint32_t, std::uint32_t>> out;
  for (const auto& s : plan.swaps) out.emplace_back(s.candidate.object, s.candidate.gap);
  return out;
}

AutoswapPlan bo_plan(const AutoswapCase& c, const AutoswapBoWeights& w) {
  AutoswapOptions o = c.options;
  o.score = AutoswapScore::bo;
  o.bo_weights = w;
  return ca::plan::autoswap_plan(c.program, c.costs, o);
}

AutoswapBoWeights random_weights(test::Rng& rng) {
  AutoswapBoWeights w{};
  for (double& v : w) v = static_cast<double>(rng.between(0, 2000)) / 1000.0 - 1.0;
  return w;
}

// A small search, quick under the sanitizers.
AutoswapBoOptions quick_search(std::uint64_t seed) {
  AutoswapBoOptions bo;
  bo.seed = seed;
  bo.acquisition_samples = 300;
  return bo;
}

}  // namespace

TEST_CASE("autoswap bo: the scores are standardised over the candidates, then weighed by equation (3)") {
  // DOA 1, 2, 3 (mean 2, deviation sqrt(2/3)); AOA 10, 10, 40 (mean 20,
  // deviation sqrt(200)); WDOA the same for all; SWDOA 0, 0, 6 (mean 2,
  // deviation sqrt(8)).
  const std::vector<AutoswapScores> s{{1, 10, 5, 0}, {2, 10, 5, 0}, {3, 40, 5, 6}};
  const double zd = 1 / std::sqrt(2.0 / 3);
  const double za = 10 / std::sqrt(200.0);
  const double zs = 2 / std::sqrt(8.0);
  const std::vector<double> doa = ca::plan::autoswap_bo_scores(s, {0, 1, 0, 0});
  CHECK(doa[0] == doctest::Approx(-zd));
  CHECK(doa[1] == doctest::Approx(0.0));
  CHECK(doa[2] == doctest::Approx(zd));
  // The weights in equation (3)'s order: a AOA, b DOA, c WDOA, d SWDOA. A
  // score the same for every candidate adds nothing.
  const std::vector<double> mixed = ca::plan::autoswap_bo_scores(s, {0.5, -1, 1, 0.25});
  CHECK(mixed[0] == doctest::Approx(0.5 * -za - 1 * -zd + 0.25 * -zs));
  CHECK(mixed[1] == doctest::Approx(0.5 * -za - 1 * 0 + 0.25 * -zs));
  CHECK(mixed[2] == doctest::Approx(0.5 * 2 * za - 1 * zd + 0.25 * 2 * zs));
  // Units and scale do not weigh: every score times 1000, the same BO.
  std::vector<AutoswapScores> scaled = s;
  for (AutoswapScores& x : scaled) x = {x.doa * 1000, x.aoa * 1000, x.wdoa * 1000, x.swdoa * 1000};
  const std::vector<double> again = ca::plan::autoswap_bo_scores(scaled, {0.5, -1, 1, 0.25});
  for (std::size_t i = 0; i < s.size(); ++i) CHECK(again[i] == doctest::Approx(mixed[i]));
  CHECK(ca::plan::autoswap_bo_scores({}, {1, 1, 1, 1}).empty());
  CHECK(std::isnan(s[0].of(AutoswapScore::bo)));
  CHECK(ca::plan::parse_autoswap_score("bo") == AutoswapScore::bo);
  CHECK(std::string(ca::plan::to_string(AutoswapScore::bo)) == "bo");
}

TEST_CASE("autoswap bo: a unit weight vector plans exactly as its single score") {
  for (std::size_t term = 0; term < 4; ++term) {
    const AutoswapScore single = ca::plan::autoswap_bo_terms[term];
    SUBCASE(ca::plan::to_string(single)) {
      test::Rng rng(test::test_seed(1401));
      for (int trial = 0; trial < 60; ++trial) {
        CAPTURE(trial);
        const AutoswapCase c = random_case(rng, 2, 9, 1, 14);
        AutoswapBoWeights unit{};
        unit[term] = 1;
        AutoswapOptions o = c.options;
        o.score = single;
        const AutoswapPlan expected = ca::plan::autoswap_plan(c.program, c.costs, o);
        const AutoswapPlan got = bo_plan(c, unit);
        CHECK(picks(got) == picks(expected));
        CHECK(got.overhead_seconds == expected.overhead_seconds);
        // A positive multiple ranks the same.
        unit[term] = 0.3;
        CHECK(picks(bo_plan(c, unit)) == picks(expected));
      }
    }
  }
}

TEST_CASE("autoswap bo: each pick is the best left by equation (3), SWDOA standardised with its current values") {
  test::Rng rng(test::test_seed(1402));
  int checked = 0;
  for (int trial = 0; trial < 60; ++trial) {
    CAPTURE(trial);
    const AutoswapCase c = random_case(rng, 3, 10, 4, 16);
    const AutoswapBoWeights w = random_weights(rng);
    CAPTURE(w[0]);
    CAPTURE(w[1]);
    CAPTURE(w[2]);
    CAPTURE(w[3]);
    const AutoswapPlan plan = bo_plan(c, w);
    const auto t = ca::plan::autoswap_timeline(c.program, c.costs);
    const std::vector<AutoswapCandidate> candidates = ca::plan::autoswap_candidates(c.program, c.costs, c.options);
    // The population: every candidate the selection may pick.
    std::vector<std::size_t> eligible;
    for (std::size_t i = 0; i < candidates.size(); ++i) {
      if (!candidates[i].absent.empty()) eligible.push_back(i);
    }
    std::vector<std::uint64_t> load = t.load;
    std::vector<bool> picked(candidates.size());
    for (const auto& s : plan.swaps) {
      const std::vector<AutoswapScores> all = ca::plan::autoswap_scores(t, candidates, load);
      std::vector<AutoswapScores> population;
      for (const std::size_t i : eligible) population.push_back(all[i]);
      const std::vector<double> bo = ca::plan::autoswap_bo_scores(population, w);
      std::size_t best = eligible.size();
      for (std::size_t j = 0; j < eligible.size(); ++j) {
        if (!picked[eligible[j]] && (best == eligible.size() || bo[j] > bo[best])) best = j;
      }
      REQUIRE(best < eligible.size());
      const AutoswapCandidate& want = candidates[eligible[best]];
      CHECK(std::pair(s.candidate.object, s.candidate.gap) == std::pair(want.object, want.gap));
      picked[eligible[best]] = true;
      for (const std::uint32_t k : s.candidate.absent) load[k] -= s.candidate.bytes;
      ++checked;
    }
  }
  CHECK(checked > 100);
}

TEST_CASE("autoswap bo: a negative weight reverses its score") {
  test::Rng rng(test::test_seed(1403));
  for (int trial = 0; trial < 40; ++trial) {
    CAPTURE(trial);
    const AutoswapCase c = random_case(rng, 3, 10, 4, 16);
    const AutoswapPlan plan = bo_plan(c, {0, -1, 0, 0});
    if (plan.swaps.empty()) continue;
    // The first pick has the lowest DOA of the candidates that free a kernel.
    double lowest = std::numeric_limits<double>::infinity();
    const auto t = ca::plan::autoswap_timeline(c.program, c.costs);
    const auto candidates = ca::plan::autoswap_candidates(c.program, c.costs, c.options);
    const auto scores = ca::plan::autoswap_scores(t, candidates, t.load);
    for (std::size_t i = 0; i < candidates.size(); ++i) {
      if (!candidates[i].absent.empty()) lowest = std::min(lowest, scores[i].doa);
    }
    const AutoswapCandidate& first = plan.swaps.front().candidate;
    CHECK(first.idle_seconds - first.out_seconds - first.in_seconds == doctest::Approx(lowest));
  }
}

TEST_CASE("autoswap bo: multiplying every time by 1000 changes no pick") {
  test::Rng rng(test::test_seed(1404));
  for (int trial = 0; trial < 60; ++trial) {
    CAPTURE(trial);
    const AutoswapCase c = random_case(rng, 3, 10, 4, 16);
    AutoswapCase slow = c;
    for (double& s : slow.costs.fast_seconds) s *= 1000;
    slow.costs.to_slow_gbps /= 1000;
    slow.costs.to_fast_gbps /= 1000;
    const AutoswapBoWeights w = random_weights(rng);
    CAPTURE(w[0]);
    CAPTURE(w[1]);
    CAPTURE(w[2]);
    CAPTURE(w[3]);
    const AutoswapPlan plan = bo_plan(c, w);
    const AutoswapPlan slower = bo_plan(slow, w);
    CHECK(picks(slower) == picks(plan));
    CHECK(slower.overhead_seconds == doctest::Approx(plan.overhead_seconds * 1000));
  }
}

TEST_CASE("autoswap bo: the Gaussian process interpolates its observations") {
  namespace d = ca::plan::detail;
  test::Rng rng(test::test_seed(1405));
  const Eigen::Index n = 12;
  Eigen::MatrixXd x(n, 4);
  Eigen::VectorXd y(n);
  for (Eigen::Index i = 0; i < n; ++i) {
    for (Eigen::Index j = 0; j < 4; ++j) x(i, j) = static_cast<double>(rng.between(0, 2000)) / 1000.0 - 1.0;
    // An objective in seconds, far from 0 and of a small spread.
    y(i) = 50 + 0.01 * std::sin(3 * x(i, 0)) + 0.02 * x(i, 1) * x(i, 2);
  }
  const d::GaussianProcess gp(x, y);
  CHECK(gp.size() == n);
  double spread = 0;
  for (Eigen::Index i = 0; i < n; ++i) spread = std::max(spread, std::abs(y(i) - y.mean()));
  for (Eigen::Index i = 0; i < n; ++i) {
    CAPTURE(i);
    const d::GaussianProcess::Posterior p = gp.predict(x.row(i));
    CHECK(std::abs(p.mean - y(i)) < 1e-4 * spread);
    CHECK(p.variance < 1e-4 * spread * spread);
    CHECK(p.variance >= 0);
    // No improvement expected where the best is already known.
    CHECK(d::expected_improvement(p, y(i), 0) < 1e-3 * spread);
  }
  // Far from every observation: the prior (mean and spread of the observations).
  const Eigen::RowVectorXd far = Eigen::RowVectorXd::Constant(4, 50.0);
  const d::GaussianProcess::Posterior prior = gp.predict(far);
  const double deviation = std::sqrt((y.array() - y.mean()).square().mean());
  CHECK(prior.mean == doctest::Approx(y.mean()));
  CHECK(prior.variance == doctest::Approx(deviation * deviation));
  // Expected improvement: the improvement itself without uncertainty, and
  // more of it for a lower mean or a wider posterior.
  CHECK(d::expected_improvement({1.0, 0.0}, 3.0, 0) == doctest::Approx(2.0));
  CHECK(d::expected_improvement({4.0, 0.0}, 3.0, 0) == 0.0);
  CHECK(d::expected_improvement({3.0, 1.0}, 3.0, 0) == doctest::Approx(1 / std::sqrt(2 * 3.14159265358979)));
  CHECK(d::expected_improvement({2.0, 1.0}, 3.0, 0) > d::expected_improvement({3.0, 1.0}, 3.0, 0));
  CHECK(d::expected_improvement({3.0, 4.0}, 3.0, 0) > d::expected_improvement({3.0, 1.0}, 3.0, 0));
  // Two observations at one input: the jitter keeps the factor defined.
  Eigen::MatrixXd twice(2, 4);
  twice.row(0) = x.row(0);
  twice.row(1) = x.row(0);
  const d::GaussianProcess same(twice, Eigen::Vector2d(1.0, 3.0));
  CHECK(same.predict(x.row(0)).mean == doctest::Approx(2.0));
}

TEST_CASE("autoswap bo: the optimised weights are never worse than the best single score, and give the plan") {
  test::Rng rng(test::test_seed(1406));
  int improved = 0;
  for (int trial = 0; trial < 8; ++trial) {
    CAPTURE(trial);
    const AutoswapCase c = reachable_case(rng);
    const AutoswapBoResult r = ca::plan::autoswap_optimise_weights(c.program, c.costs, c.options, quick_search(7));
    double best_single = std::numeric_limits<double>::infinity();
    for (const AutoswapScore single : ca::plan::autoswap_bo_terms) {
      AutoswapOptions o = c.options;
      o.score = single;
      best_single = std::min(
          best_single, ca::plan::autoswap_bo_objective(ca::plan::autoswap_plan(c.program, c.costs, o), o.limit, 1000));
    }
    CHECK(r.plan.fits);
    CHECK(r.best_objective <= best_single);
    CHECK(r.best_single_objective == best_single);
    // The first four evaluations are the single scores, as unit vectors in
    // equation (3)'s order; the search stops early only at an objective of 0.
    REQUIRE(!r.history.empty());
    for (std::size_t i = 0; i < std::min<std::size_t>(4, r.history.size()); ++i) {
      AutoswapBoWeights unit{};
      unit[i] = 1;
      CHECK(r.history[i].weights == unit);
      CHECK(r.history[i].source == AutoswapBoSource::single_score);
    }
    CHECK((r.history.size() == 30 || r.best_objective == 0.0));
    double lowest = std::numeric_limits<double>::infinity();
    for (const auto& e : r.history) {
      lowest = std::min(lowest, e.objective);
      for (const double v : e.weights) CHECK((v >= -1 && v <= 1));
    }
    CHECK(r.best_objective == lowest);
    CHECK(r.history[r.best_evaluation].objective == r.best_objective);
    CHECK(r.history[r.best_evaluation].weights == r.weights);
    // Its weights plan what it returns.
    const AutoswapPlan again = bo_plan(c, r.weights);
    CHECK(picks(again) == picks(r.plan));
    CHECK(ca::plan::autoswap_bo_objective(again, c.options.limit, 1000) == r.best_objective);
    if (r.best_objective < best_single) ++improved;
  }
  MESSAGE("BO beat the best single score on " << improved << " of 8 random programs");
}

TEST_CASE("autoswap bo: the search is the same for a seed, another for another seed, and reports its progress") {
  test::Rng rng(test::test_seed(1407));
  AutoswapCase c = random_case(rng, 10, 14, 16, 24);
  // Slow copies: no order hides them all, so the search does not stop at 0.
  c.costs.to_slow_gbps = c.costs.to_fast_gbps = 1e-7;
  std::vector<std::string> lines;
  AutoswapBoOptions bo = quick_search(3);
  bo.evaluations = 12;
  bo.initial_random = 3;
  bo.progress = [&](const std::string& line) { lines.push_back(line); };
  const AutoswapBoResult a = ca::plan::autoswap_optimise_weights(c.program, c.costs, c.options, bo);
  const AutoswapBoResult b = ca::plan::autoswap_optimise_weights(c.program, c.costs, c.options, bo);
  REQUIRE(a.best_objective > 0);
  REQUIRE(a.history.size() == 12);
  REQUIRE(b.history.size() == 12);
  for (std::size_t i = 0; i < a.history.size(); ++i) {
    CHECK(a.history[i].weights == b.history[i].weights);
    CHECK(a.history[i].objective == b.history[i].objective);
  }
  CHECK(a.weights == b.weights);
  for (std::size_t i = 4; i < 7; ++i) CHECK(a.history[i].source == AutoswapBoSource::random);
  for (std::size_t i = 7; i < 12; ++i) CHECK(a.history[i].source == AutoswapBoSource::expected_improvement);
  bo.seed = 4;
  const AutoswapBoResult other = ca::plan::autoswap_optimise_weights(c.program, c.costs, c.options, bo);
  CHECK(other.history[4].weights != a.history[4].weights);
  REQUIRE(lines.size() == 36);
  test::check_contains(lines.front(), "bo 1/12 (single score): weights (+1.000, +0.000, +0.000, +0.000) objective");
  test::check_contains(lines[4], "bo 5/12 (random)");
  test::check_contains(lines[11], "bo 12/12 (expected improvement)");
}

TEST_CASE("autoswap bo: a plan over the limit, by LOAD' or by its serialized copies, is penalised by how far over") {
  // Six kernels of 1 s: A and B (1000 MB each) written by kernel 0, read
  // by kernel 5; C (2000 MB) used by kernels 2 and 3. The load peaks at
  // 4000 MB at kernels 2 and 3, where C is used: 2000 MB is the least.
  const Program p = program_of({{1000 * MB, false}, {1000 * MB, false}, {2000 * MB, false}},
                               {{{0, ca::Access::write}, {1, ca::Access::write}},
                                {},
                                {{2, ca::Access::write}},
                                {{2, ca::Access::read}},
                                {},
                                {{0, ca::Access::read}, {1, ca::Access::read}}});
  const TierCosts costs = costs_of(std::vector<double>(6, 1.0), 10.0, 10.0);
  AutoswapOptions o;
  o.limit = 1000 * MB;
  const AutoswapPlan plan = ca::plan::autoswap_plan(p, costs, o);
  REQUIRE(!plan.fits);
  REQUIRE(plan.excess == 1000 * MB);
  // Over by the whole limit: excess_penalty iterations of 6 s.
  CHECK(ca::plan::autoswap_bo_objective(plan, o.limit, 1000) ==
        doctest::Approx(plan.overhead_seconds + 1000 * 6.0 * 1.0));
  CHECK(ca::plan::autoswap_bo_objective(plan, o.limit, 0) == plan.overhead_seconds);
  const AutoswapBoResult r = ca::plan::autoswap_optimise_weights(p, costs, o, quick_search(1));
  CHECK(!r.plan.fits);
  CHECK(r.best_objective == doctest::Approx(plan.overhead_seconds + 6000.0));
  // Within the limit: the overhead alone.
  o.limit = 2000 * MB;
  const AutoswapPlan fits = ca::plan::autoswap_plan(p, costs, o);
  REQUIRE(fits.fits);
  CHECK(ca::plan::autoswap_bo_objective(fits, o.limit, 1000) == fits.overhead_seconds);
  // Copies ten times slower (1 s each): LOAD' fits, but B's copy out ends
  // only at 3 s, so the serialized copies hold 3000 MB at kernel 2 (the
  // paper's LOAD''): over by half the limit.
  const AutoswapPlan slow = ca::plan::autoswap_plan(p, costs_of(std::vector<double>(6, 1.0), 1.0, 1.0), o);
  REQUIRE(slow.fits);
  REQUIRE(slow.scheduled_peak == 3000 * MB);
  CHECK(ca::plan::autoswap_bo_objective(slow, o.limit, 1000) ==
        doctest::Approx(slow.overhead_seconds + 1000 * slow.iteration_seconds * 0.5));
}

TEST_CASE("autoswap bo: bad weights and options say which value is wrong and what is allowed") {
  test::Rng rng(test::test_seed(1408));
  const AutoswapCase c = random_case(rng, 4, 8, 6, 10);
  AutoswapOptions o = c.options;
  o.score = AutoswapScore::bo;
  o.bo_weights = {0, 1.5, 0, 0};
  test::check_contains(test::invalid_argument_of([&] { (void)ca::plan::autoswap_plan(c.program, c.costs, o); }),
                       "autoswap_plan: bo_weights[1] (b, the weight of doa in equation (3)) is 1.500000; each "
                       "weight is in [-1, 1] (§IV-C)");
  o.bo_weights = {0, 0, 0, std::numeric_limits<double>::quiet_NaN()};
  test::check_contains(test::invalid_argument_of([&] { (void)ca::plan::autoswap_plan(c.program, c.costs, o); }),
                       "bo_weights[3] (d, the weight of swdoa in equation (3)) is nan");
  // Not read unless the score is bo.
  o.score = AutoswapScore::doa;
  CHECK_NOTHROW((void)ca::plan::autoswap_plan(c.program, c.costs, o));
  const std::vector<AutoswapScores> s{{1, 2, 3, 4}};
  test::check_contains(test::invalid_argument_of([&] {
                         (void)ca::plan::autoswap_bo_scores(s, {-1.25, 0, 0, 0});
                       }),
                       "autoswap_bo_scores: bo_weights[0] (a, the weight of aoa in equation (3)) is -1.250000");

  const auto message = [&](auto&& change) {
    AutoswapBoOptions bo = quick_search(1);
    change(bo);
    return test::invalid_argument_of(
        [&] { (void)ca::plan::autoswap_optimise_weights(c.program, c.costs, c.options, bo); });
  };
  test::check_contains(message([](AutoswapBoOptions& bo) { bo.evaluations = 0; }),
                       "autoswap_optimise_weights: evaluations = 0; allowed: >= 4 (the four single scores");
  test::check_contains(message([](AutoswapBoOptions& bo) { bo.evaluations = 3; }), "evaluations = 3; allowed: >= 4");
  test::check_contains(message([](AutoswapBoOptions& bo) { bo.initial_random = -1; }),
                       "initial_random = -1; allowed: >= 0");
  test::check_contains(message([](AutoswapBoOptions& bo) { bo.acquisition_samples = 0; }),
                       "acquisition_samples = 0; allowed: >= 1");
  test::check_contains(message([](AutoswapBoOptions& bo) { bo.length_scale = 0; }),
                       "length_scale = 0.000000; allowed: finite and > 0");
  test::check_contains(message([](AutoswapBoOptions& bo) { bo.noise = -1; }),
                       "noise = -1.000000; allowed: finite and > 0");
  test::check_contains(message([](AutoswapBoOptions& bo) { bo.xi = -0.5; }),
                       "xi = -0.500000; allowed: finite and >= 0");
  test::check_contains(
      message([](AutoswapBoOptions& bo) { bo.excess_penalty = std::numeric_limits<double>::infinity(); }),
      "excess_penalty = inf; allowed: finite and >= 0");
  // The plan's own checks: a limit of 0.
  AutoswapOptions no_limit = c.options;
  no_limit.limit = 0;
  test::check_contains(test::invalid_argument_of([&] {
                         (void)ca::plan::autoswap_optimise_weights(c.program, c.costs, no_limit, quick_search(1));
                       }),
                       "a memory load limit of 0 bytes");
}
