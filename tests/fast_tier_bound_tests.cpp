// The fast tier's lower bound (plan/program/fast_tier_bound.hpp): each kernel at its
// cheapest with its own arguments within the tier, on hand-made programs
// whose answers are worked out below, and never above what a plan or a
// replay achieves on random programs.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "autoswap_programs.hpp"
#include "cachedarrays/plan/program/fast_tier_bound.hpp"
#include "cachedarrays/plan/schedule/redl.hpp"
#include "test_support.hpp"

namespace ca = cachedarrays;
using ca::plan::FastTierBound;
using ca::plan::Program;
using ca::plan::TierCosts;
using test::autoswap::program_of;

namespace {

using test::R, test::W;

// Kernels of 1 s; penalties as given, by kernel, by argument.
TierCosts penalty_costs(const std::vector<std::vector<double>>& penalties) {
  TierCosts c;
  for (const std::vector<double>& row : penalties) {
    c.fast_seconds.push_back(1.0);
    c.slow_penalty.push_back(row);
  }
  c.to_slow_gbps = 1;
  c.to_fast_gbps = 1;
  return c;
}

}  // namespace

TEST_CASE("fast tier bound: each kernel at its cheapest with its own arguments within the tier") {
  // A 400 B, B 300 B, C 300 B, D 500 B. Kernel 0 uses A, B (700 B); kernel 1
  // A, C, D (1200 B); kernel 2 names B twice (300 B, once); kernel 3 C.
  const Program p = program_of({{400, false}, {300, false}, {300, false}, {500, false}},
                               {{{0, R}, {1, W}}, {{0, R}, {2, R}, {3, W}}, {{1, R}, {1, W}}, {{2, R}}});
  const TierCosts c = penalty_costs({{0.1, 0.3}, {0.5, 0.2, 0.6}, {0.25, 0.25}, {0.3}});

  SUBCASE("800 B: kernel 1 leaves A (400 B, 0.5 s) out, not C and part of D as the cheapest per byte would") {
    const FastTierBound b = ca::plan::fast_tier_bound(p, c, 800);
    CHECK(b.all_fast_seconds == doctest::Approx(4.0));
    CHECK(b.seconds == doctest::Approx(4.5));
    CHECK(b.slowdown() == doctest::Approx(1.125));
    CHECK(b.kernels_over == 1);
    CHECK(b.largest_excess == 400);
    CHECK(b.kernel_seconds == std::vector<double>{1.0, 1.5, 1.0, 1.0});
  }
  SUBCASE("500 B: kernel 0 leaves A out (0.1 s), kernel 1 A and C (0.7 s); B named twice is 300 B, within") {
    const FastTierBound b = ca::plan::fast_tier_bound(p, c, 500);
    CHECK(b.seconds == doctest::Approx(4.8));
    CHECK(b.kernels_over == 2);
    CHECK(b.largest_excess == 700);
    CHECK(b.kernel_seconds[2] == doctest::Approx(1.0));
  }
  SUBCASE("200 B: B named twice leaves the tier once, at both its penalties") {
    const FastTierBound b = ca::plan::fast_tier_bound(p, c, 200);
    CHECK(b.kernel_seconds[0] == doctest::Approx(1.4));  // 500 B over: A and B
    CHECK(b.kernel_seconds[2] == doctest::Approx(1.5));  // 100 B over: B, 0.25 + 0.25
    CHECK(b.kernel_seconds[3] == doctest::Approx(1.3));
    CHECK(b.kernels_over == 4);
  }
  SUBCASE("the whole footprint: the all-fast time") {
    const FastTierBound b = ca::plan::fast_tier_bound(p, c, 1500);
    CHECK(b.seconds == doctest::Approx(4.0));
    CHECK(b.kernels_over == 0);
    CHECK(b.slowdown() == doctest::Approx(1.0));
  }
}

TEST_CASE("fast tier bound: on a kernel time model, each choice priced by the model itself") {
  // 1 s, plus the square of the bytes on the slow tier (10 GB/s; the fast
  // tier 100 GB/s) in microseconds: arguments cost more together than alone.
  struct Convex final : ca::plan::KernelTimeModel {
    [[nodiscard]] double seconds(std::string_view, std::span<const ca::plan::ArgTraffic> args) const override {
      double slow = 0;
      for (const ca::plan::ArgTraffic& a : args) slow += a.gbps == 10 ? static_cast<double>(a.bytes) : 0;
      return 1 + slow * slow * 1e-6;
    }
  } model;
  // One kernel of A 400 B, C 300 B and D 500 B, as above.
  const Program p = program_of({{400, false}, {300, false}, {500, false}}, {{{0, R}, {1, R}, {2, W}}});
  const ca::emulation::Bandwidth fast{100, 100}, slow{10, 10};
  // 400 B over: A alone, 0.16 s either way.
  CHECK(ca::plan::fast_tier_bound(p, model, fast, slow, 800).seconds == doctest::Approx(1.16));
  // 700 B over: A and C, 0.49 s by the model; their penalties alone sum to
  // 0.25 s, which the bound on the costs takes.
  CHECK(ca::plan::fast_tier_bound(p, model, fast, slow, 500).seconds == doctest::Approx(1.49));
  const TierCosts costs = TierCosts::from_model(p, model, fast, slow);
  CHECK(ca::plan::fast_tier_bound(p, costs, 500).seconds == doctest::Approx(1.25));
  test::check_contains(test::invalid_argument_of([&] {
                         (void)ca::plan::fast_tier_bound(p, model, fast, {0, 10}, 500);
                       }),
                       "bandwidth must be > 0");
}

TEST_CASE("fast tier bound: past the exact size a kernel takes the linear relaxation, which is lower still") {
  // One kernel of 20 objects of 100 B; object i adds (i + 1) / 100 s in the
  // slow tier. 1450 B of 2000 fit: 550 B must leave. Exactly: the six
  // cheapest, 0.21 s; relaxed: the five cheapest and half the sixth, 0.18 s.
  static_assert(ca::plan::fast_tier_bound_exact_objects < 20);
  std::vector<ca::plan::ProgramObject> objects(20, {100, false});
  std::vector<test::autoswap::Use> uses;
  std::vector<double> penalties;
  for (std::uint32_t i = 0; i < 20; ++i) {
    uses.push_back({i, R});
    penalties.push_back((19 - i + 1) / 100.0);  // the cheapest last: the order given does not matter
  }
  const Program p = program_of(objects, {uses});
  const FastTierBound b = ca::plan::fast_tier_bound(p, penalty_costs({penalties}), 1450);
  CHECK(b.seconds == doctest::Approx(1.18));
  CHECK(b.seconds < 1.21);
}

TEST_CASE("fast tier bound: never above ReDL's modeled kernels on random programs, and lower for a larger tier") {
  test::Rng rng(test::test_seed(4242));
  CAPTURE(rng.seed());
  int over = 0;
  for (int i = 0; i < 200; ++i) {
    CAPTURE(i);
    const Program p = test::autoswap::random_program(rng, rng.between(3, 12), rng.between(3, 24), 1);
    const TierCosts c = test::autoswap::random_costs(rng, p);
    ca::plan::RedlOptions o;
    o.fast_limit = std::max<std::uint64_t>(1, p.max_live() * rng.between(10, 100) / 100);
    o.min_bytes = 0;
    o.alignment = 0;
    const ca::plan::RedlPlan plan = ca::plan::redl_plan(p, c, o);
    const FastTierBound b = ca::plan::fast_tier_bound(p, c, o.fast_limit);
    over += b.kernels_over > 0 ? 1 : 0;
    CHECK(b.all_fast_seconds == doctest::Approx(plan.all_fast_seconds));
    // ReDL's model keeps every kernel's arguments in DRAM within the limit
    // and charges the others their penalties; its kernels run no faster.
    for (std::size_t k = 0; k < p.kernels().size(); ++k) {
      CHECK(plan.kernel_end[k] - plan.kernel_start[k] >= b.kernel_seconds[k] - 1e-9);
    }
    CHECK(plan.modeled_seconds >= b.seconds - 1e-9);
    CHECK(ca::plan::fast_tier_bound(p, c, o.fast_limit * 2).seconds <= b.seconds + 1e-12);
  }
  CHECK(over >= 50);  // the bound is above the all-fast time often enough to mean something
}

TEST_CASE("fast tier bound: costs not of the program are refused, naming the bound") {
  const Program p = program_of({{100, false}}, {{{0, R}}, {{0, W}}});
  test::check_contains(
      test::invalid_argument_of([&] { (void)ca::plan::fast_tier_bound(p, penalty_costs({{0.1}}), 50); }),
      "fast_tier_bound: the costs give 1 kernel times");
  test::check_contains(test::invalid_argument_of([&] {
                         (void)ca::plan::fast_tier_bound(p, penalty_costs({{0.1}, {-1}}), 50);
                       }),
                       "a penalty is finite and >= 0");
}
