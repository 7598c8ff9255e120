// AutoTM's ILP (plan/autotm.hpp): on programs small enough to solve by hand
// the static and synchronous formulations find the optimum, the static plan
// never moves, every plan keeps the DRAM limit at every kernel, and bad
// input says what is wrong.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "cachedarrays/plan/autotm.hpp"
#include "test_support.hpp"

namespace ca = cachedarrays;
using ca::plan::AutotmCosts;
using ca::plan::AutotmFormulation;
using ca::plan::AutotmOptions;
using ca::plan::AutotmPlan;
using ca::plan::Program;

namespace {

// Two persistent objects of 100 bytes, A used (read) by kernel 0 and B by
// kernel 1; each kernel takes 1 s in DRAM and 1 s more with its argument in
// PMM.
Program two_kernels() {
  std::vector<ca::plan::ProgramObject> objects{{100, true}, {100, true}};
  std::vector<ca::plan::ProgramKernel> kernels{{"k0", {{0, 100, ca::Access::read}}},
                                               {"k1", {{1, 100, ca::Access::read}}}};
  std::vector<ca::plan::ProgramStep> steps{{ca::plan::StepKind::kernel, 0}, {ca::plan::StepKind::kernel, 1}};
  return Program(objects, kernels, steps);
}

AutotmCosts unit_costs(const Program& p, double copy_gbps) {
  AutotmCosts c;
  for (const auto& k : p.kernels()) {
    c.dram_seconds.push_back(1.0);
    c.pmm_penalty.emplace_back(k.args.size(), 1.0);
  }
  c.to_pmm_gbps = copy_gbps;
  c.to_dram_gbps = copy_gbps;
  return c;
}

// Replays a plan: the DRAM bytes each kernel holds (its arguments in DRAM,
// and the other live objects last left in DRAM), for the limit check.
std::vector<std::uint64_t> dram_bytes_per_kernel(const Program& p, const AutotmPlan& plan) {
  const auto n = p.objects().size();
  std::vector<bool> in_dram(n, false);
  // Persistent objects start where the end of the iteration leaves them: run twice.
  std::vector<std::uint64_t> bytes;
  for (int round = 0; round < 2; ++round) {
    bytes.clear();
    std::vector<bool> alive(n);
    for (std::size_t o = 0; o < n; ++o) alive[o] = p.objects()[o].persistent;
    for (const auto& step : p.steps()) {
      if (step.kind == ca::plan::StepKind::create) alive[step.index] = true;
      if (step.kind == ca::plan::StepKind::retire) alive[step.index] = false;
      if (step.kind != ca::plan::StepKind::kernel) continue;
      const std::uint32_t k = step.index;
      const auto& args = p.kernels()[k].args;
      std::vector<bool> io(n);
      std::uint64_t total = 0;
      for (std::size_t j = 0; j < args.size(); ++j) {
        if (io[args[j].object]) continue;
        io[args[j].object] = true;
        in_dram[args[j].object] = plan.in_dram[k][j];
        if (plan.in_dram[k][j]) total += p.objects()[args[j].object].bytes;
      }
      for (std::size_t o = 0; o < n; ++o) {
        if (alive[o] && !io[o] && in_dram[o]) total += p.objects()[o].bytes;
      }
      bytes.push_back(total);
      for (const auto& m : plan.moves) {
        if (m.kernel == k && !m.to_dram) in_dram[m.object] = false;
      }
    }
  }
  return bytes;
}

// Between two uses of an object its place changes only by a move: out
// right after a use, in right before one (around the iteration for a
// persistent object).
void check_moves_explain_placement(const Program& p, const AutotmPlan& plan) {
  const auto moved = [&](std::uint32_t o, std::uint32_t k, bool to_dram) {
    for (const auto& m : plan.moves) {
      if (m.object == o && m.kernel == k && m.to_dram == to_dram) return true;
    }
    return false;
  };
  const auto in_dram_at = [&](std::uint32_t o, std::uint32_t k) {
    const auto& args = p.kernels()[k].args;
    for (std::size_t j = 0; j < args.size(); ++j) {
      if (args[j].object == o) return static_cast<bool>(plan.in_dram[k][j]);
    }
    FAIL("object " << o << " is not an argument of kernel " << k);
    return false;
  };
  for (std::uint32_t o = 0; o < p.objects().size(); ++o) {
    const auto& uses = p.uses(o);
    const bool persistent = p.objects()[o].persistent;
    for (std::size_t i = 0; i < uses.size(); ++i) {
      if (i + 1 == uses.size() && !persistent) break;
      const std::uint32_t k = uses[i];
      const std::uint32_t next = uses[(i + 1) % uses.size()];
      const bool after = in_dram_at(o, k) && !moved(o, k, false);
      const bool during_next = in_dram_at(o, next);
      CAPTURE(o);
      CAPTURE(k);
      CAPTURE(next);
      if (after) CHECK(during_next);                         // it did not leave
      if (!after && during_next) CHECK(moved(o, next, true));  // it came in
    }
  }
}

}  // namespace

TEST_CASE("autotm: the static formulation puts one of two objects in DRAM when only one fits, and never moves") {
  const Program p = two_kernels();
  AutotmOptions o;
  o.formulation = AutotmFormulation::static_placement;
  o.dram_limit = 100;
  o.relative_gap = 0;
  const AutotmPlan plan = ca::plan::autotm_plan(p, unit_costs(p, 1), o);
  CHECK(plan.optimal);
  CHECK(plan.moves.empty());
  CHECK(plan.in_dram[0][0] != plan.in_dram[1][0]);  // exactly one in DRAM
  CHECK(plan.modeled_seconds == doctest::Approx(3.0));  // 2 kernels + one PMM penalty
  // With room for both, both.
  o.dram_limit = 200;
  const AutotmPlan roomy = ca::plan::autotm_plan(p, unit_costs(p, 1), o);
  CHECK(roomy.in_dram[0][0]);
  CHECK(roomy.in_dram[1][0]);
  CHECK(roomy.modeled_seconds == doctest::Approx(2.0));
}

TEST_CASE("autotm: the synchronous formulation moves when a move costs less than a kernel in PMM") {
  const Program p = two_kernels();
  AutotmOptions o;
  o.formulation = AutotmFormulation::synchronous;
  o.dram_limit = 100;
  o.relative_gap = 0;
  // Copies at 1 GB/s: 100 bytes take 1e-7 s, far less than the 1 s penalty.
  const AutotmPlan plan = ca::plan::autotm_plan(p, unit_costs(p, 1), o);
  CHECK(plan.optimal);
  CHECK(plan.in_dram[0][0]);
  CHECK(plan.in_dram[1][0]);
  // Each object in before its kernel and out after it (around the iteration).
  CHECK(plan.moves.size() == 4);
  CHECK(plan.modeled_seconds == doctest::Approx(2.0 + 4 * 1e-7).epsilon(1e-9));
  for (std::uint64_t b : dram_bytes_per_kernel(p, plan)) CHECK(b <= 100);

  // Copies so slow that a move costs more than the penalty: as static.
  const AutotmPlan slow = ca::plan::autotm_plan(p, unit_costs(p, 1e-8), o);
  CHECK(slow.moves.empty());
  CHECK(slow.modeled_seconds == doctest::Approx(3.0));
}

TEST_CASE("autotm: every plan keeps the DRAM limit at every kernel on random programs") {
  test::Rng rng(test::test_seed(13));
  for (int trial = 0; trial < 20; ++trial) {
    CAPTURE(trial);
    // Objects created before their first use and retired after their last,
    // a few persistent; kernels of 1-3 arguments.
    const std::size_t n = rng.between(3, 8);
    const std::size_t nk = rng.between(3, 10);
    std::vector<ca::plan::ProgramObject> objects;
    for (std::size_t o = 0; o < n; ++o) objects.push_back({rng.between(1, 10) * 100, rng.percent(30)});
    std::vector<ca::plan::ProgramKernel> kernels(nk);
    std::vector<std::vector<std::uint32_t>> users(n);
    for (std::size_t k = 0; k < nk; ++k) {
      kernels[k].name = "k" + std::to_string(k);
      const std::size_t args = rng.between(1, 3);
      for (std::size_t a = 0; a < args; ++a) {
        const auto o = static_cast<std::uint32_t>(rng.below(n));
        bool seen = false;
        for (const auto& arg : kernels[k].args) seen = seen || arg.object == o;
        if (seen) continue;
        kernels[k].args.push_back({o, objects[o].bytes, rng.percent(50) ? ca::Access::read : ca::Access::write});
        users[o].push_back(static_cast<std::uint32_t>(k));
      }
    }
    std::vector<ca::plan::ProgramStep> steps;
    for (std::size_t k = 0; k < nk; ++k) {
      for (std::size_t o = 0; o < n; ++o) {
        if (!objects[o].persistent && !users[o].empty() && users[o].front() == k) {
          steps.push_back({ca::plan::StepKind::create, static_cast<std::uint32_t>(o)});
        }
      }
      steps.push_back({ca::plan::StepKind::kernel, static_cast<std::uint32_t>(k)});
      for (std::size_t o = 0; o < n; ++o) {
        if (!objects[o].persistent && !users[o].empty() && users[o].back() == k) {
          steps.push_back({ca::plan::StepKind::retire, static_cast<std::uint32_t>(o)});
        }
      }
    }
    for (std::size_t o = 0; o < n; ++o) {
      if (users[o].empty()) objects[o].persistent = true;  // untouched: not part of the iteration's steps
    }
    const Program p(objects, kernels, steps);
    AutotmCosts costs = unit_costs(p, 0.001);
    for (auto& row : costs.pmm_penalty) {
      for (double& d : row) d = static_cast<double>(rng.between(0, 100)) / 100.0;
    }
    for (AutotmFormulation f : {AutotmFormulation::static_placement, AutotmFormulation::synchronous}) {
      CAPTURE(ca::plan::to_string(f));
      AutotmOptions o;
      o.formulation = f;
      o.dram_limit = rng.between(1, 20) * 100;
      o.relative_gap = 0;
      const AutotmPlan plan = ca::plan::autotm_plan(p, costs, o);
      for (std::uint64_t b : dram_bytes_per_kernel(p, plan)) CHECK(b <= o.dram_limit);
      if (f == AutotmFormulation::static_placement) CHECK(plan.moves.empty());
      check_moves_explain_placement(p, plan);
      // Never worse than everything in PMM.
      double all_pmm = 0;
      for (std::size_t k = 0; k < nk; ++k) {
        all_pmm += costs.dram_seconds[k];
        for (double d : costs.pmm_penalty[k]) all_pmm += d;
      }
      CHECK(plan.modeled_seconds <= all_pmm + 1e-9);
    }
  }
}

TEST_CASE("autotm: bad input says what is wrong") {
  const Program p = two_kernels();
  AutotmCosts short_costs = unit_costs(p, 1);
  short_costs.dram_seconds.pop_back();
  test::check_contains(test::invalid_argument_of([&] { (void)ca::plan::autotm_plan(p, short_costs, {}); }),
                       "the costs cover 1 kernels, the program has 2");
  AutotmOptions o;
  o.kernel_limits = {1};
  test::check_contains(test::invalid_argument_of([&] { (void)ca::plan::autotm_plan(p, unit_costs(p, 1), o); }),
                       "kernel_limits has 1 entries for 2 kernels");
  o = {};
  o.relative_gap = 1.5;
  test::check_contains(test::invalid_argument_of([&] { (void)ca::plan::autotm_plan(p, unit_costs(p, 1), o); }),
                       "relative_gap must be in [0, 1)");
  test::check_contains(test::invalid_argument_of([&] { (void)ca::plan::autotm_plan(p, unit_costs(p, 0), {}); }),
                       "copy bandwidths > 0");
}
