// AutoTM's ILP (plan/schedule/autotm.hpp): on programs small enough to solve by hand
// the static, synchronous and asynchronous formulations find the optimum
// (the asynchronous one hides moves behind kernels, a kernel taking the
// longer of itself and its moves, §7.1), a move out of an object not
// written since its last one is free (§3.6), the fragmentation loop lowers
// the limits of the kernels where the heap replay does not fit (§4.2); on
// random programs every plan keeps the DRAM limit at every kernel, its
// moves explain every change of place and its modeled time is what a
// simple simulation of it gives; the time limit holds, and bad input says
// what is wrong.
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cachedarrays/plan/schedule/autotm.hpp"
#include "test_support.hpp"
#include "wall_clock.hpp"

namespace ca = cachedarrays;
using ca::plan::AutotmFormulation;
using ca::plan::AutotmOptions;
using ca::plan::MovePlan;
using ca::plan::Program;
using ca::plan::TierCosts;
using ca::plan::TierMove;

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

TierCosts unit_costs(const Program& p, double copy_gbps) {
  TierCosts c;
  for (const auto& k : p.kernels()) {
    c.fast_seconds.push_back(1.0);
    c.slow_penalty.emplace_back(k.args.size(), 1.0);
  }
  c.to_slow_gbps = copy_gbps;
  c.to_fast_gbps = copy_gbps;
  return c;
}

// The argument index of object o in kernel k.
std::size_t arg_of(const Program& p, std::uint32_t o, std::uint32_t k) {
  const auto& args = p.kernels()[k].args;
  for (std::size_t j = 0; j < args.size(); ++j) {
    if (args[j].object == o) return j;
  }
  FAIL("object " << o << " is not an argument of kernel " << k);
  return 0;
}

// Replays a plan: the DRAM bytes each kernel holds (its arguments in DRAM,
// the other live objects last left in DRAM, and the objects moving beside
// it: a move in holds its DRAM from its kernel on, a move out until after
// its kernel), for the limit check.
std::vector<std::uint64_t> dram_bytes_per_kernel(const Program& p, const MovePlan& plan) {
  const auto n = p.objects().size();
  std::vector<bool> in_fast(n, false);
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
      for (const auto& m : plan.moves) {
        if (m.kernel == k && m.to_fast && m.asynchronous) in_fast[m.object] = true;
      }
      const auto& args = p.kernels()[k].args;
      std::vector<bool> io(n);
      std::uint64_t total = 0;
      for (std::size_t j = 0; j < args.size(); ++j) {
        if (io[args[j].object]) continue;
        io[args[j].object] = true;
        in_fast[args[j].object] = plan.in_fast[k][j];
        if (plan.in_fast[k][j]) total += p.objects()[args[j].object].bytes;
      }
      for (std::size_t o = 0; o < n; ++o) {
        if (alive[o] && !io[o] && in_fast[o]) total += p.objects()[o].bytes;
      }
      bytes.push_back(total);
      for (const auto& m : plan.moves) {
        if (m.kernel == k && !m.to_fast) in_fast[m.object] = false;
      }
    }
  }
  return bytes;
}

// Between two uses of an object its place changes only by a move: out
// right after a use or beside a kernel of the gap, in beside a kernel of
// the gap or right before the next use (around the iteration for a
// persistent object). An asynchronous move in starts in PMM, one out in
// DRAM, and neither overlaps a kernel that uses the object.
void check_moves_explain_placement(const Program& p, const MovePlan& plan) {
  const auto nk = static_cast<std::uint32_t>(p.kernels().size());
  const auto find = [&](std::uint32_t o, std::uint32_t k, bool to_fast, bool async) {
    return std::count_if(plan.moves.begin(), plan.moves.end(), [&](const TierMove& m) {
      return m.object == o && m.kernel == k && m.to_fast == to_fast && m.asynchronous == async;
    });
  };
  const auto in_dram_at = [&](std::uint32_t o, std::uint32_t k) {
    return static_cast<bool>(plan.in_fast[k][arg_of(p, o, k)]);
  };
  for (const auto& m : plan.moves) {
    if (!m.asynchronous) continue;
    for (const auto& a : p.kernels()[m.kernel].args) CHECK(a.object != m.object);
  }
  for (std::uint32_t o = 0; o < p.objects().size(); ++o) {
    const auto& uses = p.uses(o);
    const bool persistent = p.objects()[o].persistent;
    for (std::size_t i = 0; i < uses.size(); ++i) {
      if (i + 1 == uses.size() && !persistent) break;
      const std::uint32_t k = uses[i];
      const std::uint32_t next = uses[(i + 1) % uses.size()];
      CAPTURE(o);
      CAPTURE(k);
      CAPTURE(next);
      CHECK(find(o, k, true, true) + find(o, k, false, true) == 0);
      bool here = in_dram_at(o, k) && find(o, k, false, false) == 0;
      for (std::uint32_t g = (k + 1) % nk; g != next; g = (g + 1) % nk) {
        const auto in = find(o, g, true, true);
        const auto out = find(o, g, false, true);
        CHECK(in + out <= 1);
        if (in > 0) CHECK(!here);
        if (out > 0) CHECK(here);
        if (in > 0) here = true;
        if (out > 0) here = false;
      }
      const bool during_next = in_dram_at(o, next);
      if (here) CHECK(during_next);                                                  // it did not leave
      CHECK(find(o, next, true, false) == static_cast<long>(!here && during_next));  // it came in, only then
    }
  }
}

// The modeled time of a plan, simulated (two iterations, the second
// counted): each kernel takes the longer of its time with its arguments
// where the plan puts them and its asynchronous moves, plus the synchronous
// moves; a move out copies only when the PMM copy is stale (§3.6): the
// object was written in DRAM, or created there, since its PMM copy was last
// made valid.
double simulated_seconds(const Program& p, const TierCosts& c, const MovePlan& plan, bool write_once = false) {
  const auto n = p.objects().size();
  std::vector<bool> pmm_valid(n, true);
  double total = 0;
  for (int round = 0; round < 2; ++round) {
    total = 0;
    for (const auto& step : p.steps()) {
      if (step.kind == ca::plan::StepKind::create) {
        const std::uint32_t o = step.index;
        if (!p.uses(o).empty()) pmm_valid[o] = !plan.in_fast[p.uses(o).front()][arg_of(p, o, p.uses(o).front())];
      }
      if (step.kind != ca::plan::StepKind::kernel) continue;
      const std::uint32_t k = step.index;
      double rho = c.fast_seconds[k];
      double beside = 0;
      double blocking = 0;
      const auto& args = p.kernels()[k].args;
      for (std::size_t j = 0; j < args.size(); ++j) {
        if (!plan.in_fast[k][j]) rho += c.slow_penalty[k][j];
      }
      for (const auto& m : plan.moves) {
        if (m.kernel != k) continue;
        const double bytes = static_cast<double>(p.objects()[m.object].bytes);
        if (m.to_fast) (m.asynchronous ? beside : blocking) += bytes / (c.to_fast_gbps * 1e9);
      }
      for (std::size_t j = 0; j < args.size(); ++j) {
        if (args[j].access == ca::Access::write) pmm_valid[args[j].object] = !plan.in_fast[k][j];
      }
      for (const auto& m : plan.moves) {
        if (m.kernel != k || m.to_fast) continue;
        const double bytes = static_cast<double>(p.objects()[m.object].bytes);
        if (!pmm_valid[m.object] || !write_once) (m.asynchronous ? beside : blocking) += bytes / (c.to_slow_gbps * 1e9);
        pmm_valid[m.object] = true;
      }
      total += std::max(rho, beside) + blocking;
    }
  }
  return total;
}

// A random program: objects created before their first use and retired
// after their last, a few persistent; kernels of 1-3 arguments.
Program random_autotm_program(test::Rng& rng, std::size_t n, std::size_t nk) {
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
  return Program(objects, kernels, steps);
}

TierCosts random_costs(test::Rng& rng, const Program& p, double copy_gbps) {
  TierCosts costs = unit_costs(p, copy_gbps);
  for (auto& row : costs.slow_penalty) {
    for (double& d : row) d = static_cast<double>(rng.between(0, 100)) / 100.0;
  }
  return costs;
}

// Objects: A (persistent), then B, C, D, each created just before its one
// kernel and retired after it. Kernel 0 writes A, kernels 1, 2, 3 write B,
// C, D, kernel 4 reads A. Sizes in multiples of the heap's alignment (64),
// so that the heap replay holds exactly what the ILP counts.
Program gap_of_three(std::uint64_t a, std::uint64_t b, std::uint64_t c, std::uint64_t d) {
  using ca::plan::StepKind;
  std::vector<ca::plan::ProgramObject> objects{{a, true}, {b, false}, {c, false}, {d, false}};
  std::vector<ca::plan::ProgramKernel> kernels{{"k0", {{0, a, ca::Access::write}}},
                                               {"k1", {{1, b, ca::Access::write}}},
                                               {"k2", {{2, c, ca::Access::write}}},
                                               {"k3", {{3, d, ca::Access::write}}},
                                               {"k4", {{0, a, ca::Access::read}}}};
  std::vector<ca::plan::ProgramStep> steps{{StepKind::kernel, 0}, {StepKind::create, 1}, {StepKind::kernel, 1},
                                           {StepKind::retire, 1}, {StepKind::create, 2}, {StepKind::kernel, 2},
                                           {StepKind::retire, 2}, {StepKind::create, 3}, {StepKind::kernel, 3},
                                           {StepKind::retire, 3}, {StepKind::kernel, 4}};
  return Program(objects, kernels, steps);
}

// Copies of `bytes` taking `seconds` each way.
TierCosts unit_costs_with_copy(const Program& p, std::uint64_t bytes, double seconds) {
  return unit_costs(p, static_cast<double>(bytes) / (seconds * 1e9));
}

// Every formulation, in the order each allows what the one before does.
constexpr AutotmFormulation all_formulations[] = {AutotmFormulation::static_placement, AutotmFormulation::synchronous,
                                                  AutotmFormulation::asynchronous};

// An exact solve (relative gap 0) of `formulation` under `limit`, with
// asynchronous windows of 2 kernels.
AutotmOptions exact_options(AutotmFormulation formulation, std::uint64_t limit) {
  AutotmOptions o;
  o.formulation = formulation;
  o.dram_limit = limit;
  o.relative_gap = 0;
  o.async_window = 2;
  return o;
}

}  // namespace

TEST_CASE("autotm: the static formulation puts one of two objects in DRAM when only one fits, and never moves") {
  const Program p = two_kernels();
  AutotmOptions o;
  o.formulation = AutotmFormulation::static_placement;
  o.dram_limit = 100;
  o.relative_gap = 0;
  o.max_retries = 0;  // the ILP's own optimum (the heap would round 100 bytes up to 128)
  const MovePlan plan = ca::plan::autotm_plan(p, unit_costs(p, 1), o);
  CHECK(plan.optimal);
  CHECK(plan.moves.empty());
  CHECK(plan.in_fast[0][0] != plan.in_fast[1][0]);      // exactly one in DRAM
  CHECK(plan.modeled_seconds == doctest::Approx(3.0));  // 2 kernels + one PMM penalty
  // With room for both, both.
  o.dram_limit = 200;
  const MovePlan roomy = ca::plan::autotm_plan(p, unit_costs(p, 1), o);
  CHECK(roomy.in_fast[0][0]);
  CHECK(roomy.in_fast[1][0]);
  CHECK(roomy.modeled_seconds == doctest::Approx(2.0));
}

TEST_CASE("autotm: the synchronous formulation moves when a move costs less than a kernel in PMM") {
  const Program p = two_kernels();
  AutotmOptions o;
  o.formulation = AutotmFormulation::synchronous;
  o.dram_limit = 100;
  o.relative_gap = 0;
  o.max_retries = 0;
  // Copies at 1 GB/s: 100 bytes take 1e-7 s, far less than the 1 s penalty.
  const MovePlan plan = ca::plan::autotm_plan(p, unit_costs(p, 1), o);
  CHECK(plan.optimal);
  CHECK(plan.in_fast[0][0]);
  CHECK(plan.in_fast[1][0]);
  // Each object in before its kernel and out after it (around the
  // iteration): four copies of 1e-7 s.
  CHECK(plan.moves.size() == 4);
  CHECK(plan.modeled_seconds == doctest::Approx(2.0 + 4 * 1e-7).epsilon(1e-9));
  for (std::uint64_t b : dram_bytes_per_kernel(p, plan)) CHECK(b <= 100);
  // With the write-once saving (§3.6): the kernels only read, so the PMM
  // copies stay valid and the moves out copy nothing.
  AutotmOptions once = o;
  once.write_once = true;
  const MovePlan saving = ca::plan::autotm_plan(p, unit_costs(p, 1), once);
  CHECK(saving.moves.size() == 4);
  CHECK(saving.modeled_seconds == doctest::Approx(2.0 + 2 * 1e-7).epsilon(1e-9));

  // Copies so slow that a move costs more than the penalty: as static.
  const MovePlan slow = ca::plan::autotm_plan(p, unit_costs(p, 1e-8), o);
  CHECK(slow.moves.empty());
  CHECK(slow.modeled_seconds == doctest::Approx(3.0));
}

TEST_CASE("autotm: the asynchronous formulation moves an object out and back in beside the kernels of its gap") {
  // A (128 bytes) is written by kernel 0 and read by kernel 4; kernel 2
  // writes C, which fills the limit of 256 bytes, so A must not be in DRAM
  // during kernel 2, and kernels 1 and 3 (B, D: 128 bytes) leave room for A
  // beside their argument. Every kernel takes 1 s, 1 s more per argument in
  // PMM; a copy of A takes 0.4 s.
  // An asynchronous move holds its DRAM during its kernel (a move out frees
  // it after, a move in takes it from the start), so freeing kernel 2 takes
  // a move out beside kernel 1 and one in beside kernel 3: the gap needs
  // three kernels (with two, both moves would sit beside the two kernels
  // and free nothing).
  const Program p = gap_of_three(128, 128, 256, 128);
  const TierCosts costs = unit_costs_with_copy(p, 128, 0.4);
  AutotmOptions o;
  o.dram_limit = 256;
  o.relative_gap = 0;

  o.formulation = AutotmFormulation::asynchronous;
  const MovePlan async = ca::plan::autotm_plan(p, costs, o);
  CHECK(async.optimal);
  // Everything in DRAM while it is used, the copies hidden: 5 kernels of 1 s.
  CHECK(async.modeled_seconds == doctest::Approx(5.0));
  for (std::size_t k = 0; k < 5; ++k) CHECK(async.in_fast[k][0]);
  REQUIRE(async.moves.size() == 2);
  CHECK(async.moves[0].object == 0);
  CHECK(async.moves[0].kernel == 1);
  CHECK(!async.moves[0].to_fast);
  CHECK(async.moves[0].asynchronous);
  CHECK(async.moves[1].object == 0);
  CHECK(async.moves[1].kernel == 3);
  CHECK(async.moves[1].to_fast);
  CHECK(async.moves[1].asynchronous);
  for (std::uint64_t b : dram_bytes_per_kernel(p, async)) CHECK(b <= 256);
  CHECK(async.fits);
  CHECK(async.retries == 0);
  CHECK(simulated_seconds(p, costs, async) == doctest::Approx(async.modeled_seconds));

  // Synchronously the same moves block: 5 + 0.4 (out after kernel 0; A was
  // written in DRAM, so the move copies) + 0.4 (in before kernel 4), cheaper
  // than C in PMM (6) or A in PMM (7).
  o.formulation = AutotmFormulation::synchronous;
  const MovePlan sync = ca::plan::autotm_plan(p, costs, o);
  CHECK(sync.optimal);
  CHECK(sync.modeled_seconds == doctest::Approx(5.8));
  CHECK(sync.moves.size() == 2);
  for (const TierMove& m : sync.moves) CHECK(!m.asynchronous);
  CHECK(async.modeled_seconds < sync.modeled_seconds);
}

TEST_CASE("autotm: a kernel beside slower copies takes as long as the copies (the max of (7))") {
  // As above with copies of 1.2 s: kernels 1 and 3 each take max(1, 1.2),
  // so 5 + 0.2 + 0.2 = 5.4, ahead of C in PMM (6) and of blocking moves
  // (5 + 2.4). A sum instead of the max would make it 7.4, a free overlap 5.
  const Program p = gap_of_three(128, 128, 256, 128);
  const TierCosts costs = unit_costs_with_copy(p, 128, 1.2);
  AutotmOptions o;
  o.formulation = AutotmFormulation::asynchronous;
  o.dram_limit = 256;
  o.relative_gap = 0;
  const MovePlan plan = ca::plan::autotm_plan(p, costs, o);
  CHECK(plan.optimal);
  CHECK(plan.modeled_seconds == doctest::Approx(5.4));
  REQUIRE(plan.moves.size() == 2);
  CHECK(plan.moves[0].asynchronous);
  CHECK(plan.moves[1].asynchronous);
  CHECK(simulated_seconds(p, costs, plan) == doctest::Approx(plan.modeled_seconds));
}

TEST_CASE("autotm: a move out of an object not written since its last move out copies nothing (write-once, §3.6)") {
  // A (128 bytes, persistent) is written by kernel 0 and read by kernels 2,
  // 4, ..., 2 reads; the odd kernels write objects of 256 bytes, which fill
  // the limit of 256 bytes. The plan keeps A in DRAM for its uses and moves
  // it out after each use before an odd kernel and in before each read;
  // copies take 0.1 s. Only the first move out copies: after it the PMM
  // copy stays valid, since the later uses only read. With 2 reads:
  // 5 kernels + 0.1 (out) + 2 * 0.1 (in) = 5.3, where paying every move out
  // would give 5.4. With 12 reads the asynchronous formulation has 25
  // candidate moves out after the write (a sync one after each use, an
  // asynchronous one beside each odd kernel), more than the ILP's blocks of
  // 16: 25 kernels + 0.1 + 12 * 0.1 = 26.3.
  using ca::plan::StepKind;
  for (std::uint32_t reads : {2u, 12u}) {
    CAPTURE(reads);
    std::vector<ca::plan::ProgramObject> objects{{128, true}};
    std::vector<ca::plan::ProgramKernel> kernels{{"k0", {{0, 128, ca::Access::write}}}};
    std::vector<ca::plan::ProgramStep> steps{{StepKind::kernel, 0}};
    for (std::uint32_t r = 1; r <= reads; ++r) {
      const auto b = static_cast<std::uint32_t>(objects.size());
      objects.push_back({256, false});
      kernels.push_back({"fill", {{b, 256, ca::Access::write}}});
      kernels.push_back({"read", {{0, 128, ca::Access::read}}});
      steps.push_back({StepKind::create, b});
      steps.push_back({StepKind::kernel, 2 * r - 1});
      steps.push_back({StepKind::retire, b});
      steps.push_back({StepKind::kernel, 2 * r});
    }
    const Program p(objects, kernels, steps);
    const TierCosts costs = unit_costs_with_copy(p, 128, 0.1);
    for (AutotmFormulation f : {AutotmFormulation::synchronous, AutotmFormulation::asynchronous}) {
      const std::string formulation = ca::plan::to_string(f);
      CAPTURE(formulation);
      AutotmOptions o;
      o.formulation = f;
      o.dram_limit = 256;
      o.relative_gap = 0;
      o.write_once = true;
      const MovePlan plan = ca::plan::autotm_plan(p, costs, o);
      CHECK(plan.optimal);
      CHECK(plan.modeled_seconds == doctest::Approx(2.0 * reads + 1 + 0.1 * (reads + 1)));
      const auto outs =
          std::count_if(plan.moves.begin(), plan.moves.end(), [](const TierMove& m) { return !m.to_fast; });
      CHECK(outs == reads);
      CHECK(plan.moves.size() == 2 * reads);
      CHECK(simulated_seconds(p, costs, plan, true) == doctest::Approx(plan.modeled_seconds));
    }
  }
}

TEST_CASE("autotm: every plan keeps the DRAM limit at every kernel on random programs") {
  test::Rng rng(test::test_seed(13));
  for (int trial = 0; trial < 20; ++trial) {
    CAPTURE(trial);
    const Program p = random_autotm_program(rng, rng.between(3, 8), rng.between(3, 10));
    const std::size_t nk = p.kernels().size();
    // Copies of 100-1000 bytes at 1e-9 GB/s: 0.1-1 s, as long as the
    // kernels; the asynchronous formulation has something to hide.
    const TierCosts costs = random_costs(rng, p, rng.percent(50) ? 0.001 : 1e-9);
    const std::uint64_t limit = rng.between(1, 20) * 100;
    std::vector<double> modeled;
    std::optional<MovePlan> static_plan;
    for (AutotmFormulation f : all_formulations) {
      const std::string formulation = ca::plan::to_string(f);
      CAPTURE(formulation);
      AutotmOptions o = exact_options(f, limit);
      o.write_once = trial % 2 == 0;
      // The fragmentation loop only lowers limits: the plan keeps them all.
      const MovePlan plan = ca::plan::autotm_plan(p, costs, o);
      CAPTURE(plan.status);
      CHECK(plan.optimal);
      for (std::uint64_t b : dram_bytes_per_kernel(p, plan)) CHECK(b <= o.dram_limit);
      REQUIRE(plan.kernel_limits.size() == nk);
      for (std::size_t k = 0; k < nk; ++k) CHECK(plan.kernel_limits[k] <= o.dram_limit);
      if (f == AutotmFormulation::static_placement) CHECK(plan.moves.empty());
      if (f != AutotmFormulation::asynchronous) {
        for (const TierMove& m : plan.moves) CHECK(!m.asynchronous);
      }
      check_moves_explain_placement(p, plan);
      CHECK(simulated_seconds(p, costs, plan, o.write_once) == doctest::Approx(plan.modeled_seconds).epsilon(1e-9));
      const auto extents = ca::plan::autotm_dram_extents(p, plan, o.alignment);
      CHECK(plan.fast_extent == *std::max_element(extents.begin(), extents.end()));
      CHECK(plan.fits == (plan.fast_extent <= o.dram_limit));
      // Never worse than everything in PMM.
      double all_pmm = 0;
      for (std::size_t k = 0; k < nk; ++k) {
        all_pmm += costs.fast_seconds[k];
        for (double d : costs.slow_penalty[k]) all_pmm += d;
      }
      CHECK(plan.modeled_seconds <= all_pmm + 1e-9);
      // Each formulation allows what the one before does (at the same
      // limits: without the loop).
      o.max_retries = 0;
      modeled.push_back(ca::plan::autotm_plan(p, costs, o).modeled_seconds);
      // The loop keeps its best plan: one that fits, or none worse than
      // the first solve's; and never one over twice as slow as it.
      CHECK((plan.fits || plan.modeled_seconds <= modeled.back() + 1e-9));
      CHECK(plan.modeled_seconds <= modeled.back() * 2 + 1e-9);
      // The static plan, through its own loop, is a synchronous one too:
      // the loops of the others never return a plan it beats (as fitting,
      // and faster; or fitting where they do not, and not over twice as
      // slow).
      if (!static_plan) {
        static_plan = plan;
      } else if (plan.fits == static_plan->fits) {
        CHECK(plan.modeled_seconds <= static_plan->modeled_seconds + 1e-9);
      } else if (static_plan->fits) {
        CHECK(static_plan->modeled_seconds > 2 * plan.modeled_seconds);
      }
    }
    CHECK(modeled[1] <= modeled[0] + 1e-9);
    CHECK(modeled[2] <= modeled[1] + 1e-9);
  }
}

TEST_CASE("autotm: plans do not depend on the unit of time (kernels of microseconds, as the trainer's)") {
  // Cbc's tolerances are absolute: with the objective in seconds and
  // kernels of microseconds it prunes every node worth less than 1e-5, and
  // can call a synchronous plan slower than the static one optimal (the
  // static plan is one of its solutions). The same programs with every time
  // a millionth of its size must get plans a millionth as long.
  test::Rng rng(test::test_seed(131));
  for (int trial = 0; trial < 12; ++trial) {
    CAPTURE(trial);
    const Program p = random_autotm_program(rng, rng.between(3, 8), rng.between(3, 10));
    const TierCosts costs = random_costs(rng, p, rng.percent(50) ? 0.001 : 1e-9);
    TierCosts tiny = costs;
    for (double& s : tiny.fast_seconds) s *= 1e-6;
    for (auto& row : tiny.slow_penalty) {
      for (double& d : row) d *= 1e-6;
    }
    tiny.to_fast_gbps *= 1e6;
    tiny.to_slow_gbps *= 1e6;
    const std::uint64_t limit = rng.between(1, 20) * 100;
    std::vector<double> modeled;
    for (AutotmFormulation f : all_formulations) {
      const std::string formulation = ca::plan::to_string(f);
      CAPTURE(formulation);
      AutotmOptions o = exact_options(f, limit);
      o.max_retries = 0;
      const MovePlan plan = ca::plan::autotm_plan(p, costs, o);
      const MovePlan small = ca::plan::autotm_plan(p, tiny, o);
      CAPTURE(small.status);
      CHECK(small.optimal);
      CHECK(small.modeled_seconds == doctest::Approx(1e-6 * plan.modeled_seconds).epsilon(1e-6));
      modeled.push_back(small.modeled_seconds);
    }
    CHECK(modeled[1] <= modeled[0] * (1 + 1e-9));
    CHECK(modeled[2] <= modeled[1] * (1 + 1e-9));
  }
}

TEST_CASE(
    "autotm: the fragmentation loop lowers the limit where the best-fit heap does not fit, until it does (§4.2)") {
  // a, b, c (64 bytes each) are created for kernel 0; a and c are retired
  // after it, and d (128 bytes) is created for kernel 1 beside b. The ILP
  // counts 192 bytes at each kernel, the limit; but on the heap b sits
  // between a's and c's holes, so d lands above them, at 256.
  using ca::plan::StepKind;
  std::vector<ca::plan::ProgramObject> objects{{64, false}, {64, false}, {64, false}, {128, false}};
  std::vector<ca::plan::ProgramKernel> kernels{
      {"k0", {{0, 64, ca::Access::write}, {1, 64, ca::Access::write}, {2, 64, ca::Access::write}}},
      {"k1", {{1, 64, ca::Access::read}, {3, 128, ca::Access::write}}}};
  std::vector<ca::plan::ProgramStep> steps{{StepKind::create, 0}, {StepKind::create, 1}, {StepKind::create, 2},
                                           {StepKind::kernel, 0}, {StepKind::retire, 0}, {StepKind::retire, 2},
                                           {StepKind::create, 3}, {StepKind::kernel, 1}, {StepKind::retire, 1},
                                           {StepKind::retire, 3}};
  const Program p(objects, kernels, steps);
  const TierCosts costs = unit_costs(p, 1);
  AutotmOptions o;
  o.formulation = AutotmFormulation::synchronous;
  o.dram_limit = 192;
  o.relative_gap = 0;

  // The first solve: everything in DRAM, 2 s, and 256 bytes on the heap.
  o.max_retries = 0;
  const MovePlan first = ca::plan::autotm_plan(p, costs, o);
  CHECK(first.modeled_seconds == doctest::Approx(2.0));
  CHECK(first.retries == 0);
  CHECK(first.kernel_limits == std::vector<std::uint64_t>{192, 192});
  CHECK(ca::plan::autotm_dram_extents(p, first, 64) == std::vector<std::uint64_t>{192, 256});

  // The loop in the paper's 2% steps: kernel 1's limit becomes 188, b or
  // d goes to PMM there (3 s), and the heap fits.
  o.max_retries = 8;
  o.lower_by_overflow = false;
  const MovePlan plan = ca::plan::autotm_plan(p, costs, o);
  CHECK(plan.retries == 1);
  CHECK(plan.kernel_limits == std::vector<std::uint64_t>{192, 188});
  CHECK(plan.fits);
  CHECK(plan.fast_extent <= 192);
  const auto extents = ca::plan::autotm_dram_extents(p, plan, 64);
  CHECK(*std::max_element(extents.begin(), extents.end()) <= 192);
  CHECK(plan.modeled_seconds == doctest::Approx(3.0));
  test::check_contains(plan.status, "fits");
  CHECK(plan.seconds >= 0);

  // Lowered by its overflow instead: 192 * 192 / 256 = 144 at kernel 1,
  // the same plan in one retry.
  o.lower_by_overflow = true;
  const MovePlan by_overflow = ca::plan::autotm_plan(p, costs, o);
  CHECK(by_overflow.retries == 1);
  CHECK(by_overflow.kernel_limits == std::vector<std::uint64_t>{192, 144});
  CHECK(by_overflow.fits);
  CHECK(by_overflow.modeled_seconds == doctest::Approx(3.0));
  o.lower_by_overflow = false;

  // When the retries run out first, the plan is still returned, and says so.
  // (A limit of 200: lowered once to 199, it still lets all 192 bytes in.)
  o.max_retries = 1;
  o.dram_limit = 200;
  const MovePlan short_of = ca::plan::autotm_plan(p, costs, o);
  CHECK(short_of.retries == 1);
  CHECK(!short_of.fits);
  CHECK(short_of.fast_extent == 256);
  test::check_contains(short_of.status, "still does not fit after 1 retries");
}

TEST_CASE("autotm: the solver stops at the time limit with the best plan found") {
  // The asynchronous formulation of 40 objects and 160 kernels: a proven
  // optimum takes Cbc far longer than the 1 s limit. The contract is what
  // the plan reports: it stopped at the limit and says so, it keeps the DRAM
  // limit, and it is no worse than the greedy start the search begins from.
  // How long past the limit Cbc runs is the machine's (it checks the limit
  // between its steps, not inside the root's cuts), so the only wall-clock
  // bound is a generous one that catches a solve ignoring its limit. The
  // limit must leave time to search after the ILP is built, which a sanitizer
  // on a loaded machine can make take longer than the whole limit (the plan
  // is then the start, unsearched, as it says): so the limit is at least
  // four times what the start took, measured here beside the same load.
  test::Rng rng(test::test_seed(29));
  const Program p = random_autotm_program(rng, 40, 160);
  const TierCosts costs = random_costs(rng, p, 1e-9);
  AutotmOptions o;
  o.formulation = AutotmFormulation::asynchronous;
  o.dram_limit = 1500;
  o.relative_gap = 0;
  o.max_retries = 0;  // one solve (each solve has the limit)
  // The start: the same problem with no time to search.
  AutotmOptions start_options = o;
  start_options.time_limit_seconds = 0.001;
  const auto start_t0 = std::chrono::steady_clock::now();
  const MovePlan start = ca::plan::autotm_plan(p, costs, start_options);
  const double start_wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_t0).count();
  CAPTURE(start.status);
  CAPTURE(start_wall);
  test::check_contains(start.status, "no time left to solve");
  o.time_limit_seconds = std::max(1.0, 4 * start_wall);
  CAPTURE(o.time_limit_seconds);
  const auto t0 = std::chrono::steady_clock::now();
  const MovePlan plan = ca::plan::autotm_plan(p, costs, o);
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  CAPTURE(plan.status);
  CAPTURE(plan.seconds);
  test::check_contains(plan.status, "stopped at the time limit");
  CHECK(!plan.optimal);
  CHECK(plan.seconds >= o.time_limit_seconds * 0.5);  // it searched: the limit, not the start, ended it
  CHECK(plan.seconds <= wall);
  CHECK(wall < test::generous_seconds(10 * o.time_limit_seconds));
  // A solve that ran well past its limit says by how much, and then the
  // whole plan took longer than the limit too.
  if (test::contains(plan.status, "past its limit")) CHECK(plan.seconds > o.time_limit_seconds);
  for (std::uint64_t b : dram_bytes_per_kernel(p, plan)) CHECK(b <= o.dram_limit);
  CHECK(simulated_seconds(p, costs, plan, o.write_once) == doctest::Approx(plan.modeled_seconds).epsilon(1e-9));
  CHECK(plan.modeled_seconds <= start.modeled_seconds * (1 + 1e-9));
}

TEST_CASE("autotm: with no time to search, the plan is still the greedy knapsack's, not everything in PMM") {
  // 300 objects over 1000 kernels and 1 ms: too little to start Cbc, so
  // whatever is in DRAM the greedy start put there (a start of "everything
  // in PMM" would leave the plan close to all_pmm, which the check below
  // tells apart).
  test::Rng rng(test::test_seed(31));
  const Program p = random_autotm_program(rng, 300, 1000);
  const TierCosts costs = random_costs(rng, p, 1e-9);
  double all_pmm = 0;
  for (std::size_t k = 0; k < p.kernels().size(); ++k) {
    all_pmm += costs.fast_seconds[k];
    for (double d : costs.slow_penalty[k]) all_pmm += d;
  }
  for (AutotmFormulation f : {AutotmFormulation::static_placement, AutotmFormulation::synchronous}) {
    const std::string formulation = ca::plan::to_string(f);
    CAPTURE(formulation);
    AutotmOptions o = exact_options(f, 3000);
    o.time_limit_seconds = 0.001;
    o.max_retries = 0;
    const MovePlan plan = ca::plan::autotm_plan(p, costs, o);
    CAPTURE(plan.status);
    test::check_contains(plan.status, "no time left to solve");
    CHECK_FALSE(plan.optimal);
    CHECK(plan.gap == doctest::Approx(1.0));
    for (std::uint64_t b : dram_bytes_per_kernel(p, plan)) CHECK(b <= o.dram_limit);
    CHECK(simulated_seconds(p, costs, plan, o.write_once) == doctest::Approx(plan.modeled_seconds).epsilon(1e-9));
    // Everything in PMM would be all_pmm; the greedy plan holds objects
    // worth far more than one kernel's penalty (at most 1 s each).
    CHECK(plan.modeled_seconds < all_pmm - 10.0);
  }
}

TEST_CASE("autotm: bad input says what is wrong") {
  const Program p = two_kernels();
  TierCosts short_costs = unit_costs(p, 1);
  short_costs.fast_seconds.pop_back();
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
  o = {};
  o.formulation = AutotmFormulation::asynchronous;
  o.async_window = 0;
  test::check_contains(test::invalid_argument_of([&] { (void)ca::plan::autotm_plan(p, unit_costs(p, 1), o); }),
                       "async_window >= 1");
  o = {};
  o.fragmentation_factor = 1;
  test::check_contains(test::invalid_argument_of([&] { (void)ca::plan::autotm_plan(p, unit_costs(p, 1), o); }),
                       "fragmentation_factor must be in (0, 1)");
  o = {};
  o.alignment = 48;
  test::check_contains(test::invalid_argument_of([&] { (void)ca::plan::autotm_plan(p, unit_costs(p, 1), o); }),
                       "alignment 48 must be a power of two");
  MovePlan wrong;
  wrong.in_fast = {{true}};
  test::check_contains(test::invalid_argument_of([&] { (void)ca::plan::autotm_dram_extents(p, wrong, 64); }),
                       "the plan places 1 kernels' arguments, the program has 2 kernels");
}
