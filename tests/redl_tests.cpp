// ReDL's planner (plan/schedule/redl.hpp, ReDL §III): liveness and the
// short/long split on a hand-made program (kernels, groups of kernels and
// named layers as layers); a limit at the peak keeps everything in DRAM at
// the all-DRAM time; on a program worked by hand, the copy in issued at the
// start of the previous period, DSMA when it is late, a wait when the late
// use writes, and the copy out at the end; where a period's objects do not
// all fit, the room by first use or by slow-tier cost; on random programs, a replay of
// the MovePlan written here (not the planner's) keeps the limit at every
// kernel and finds every move consistent (a copy in only of an object in
// PMM, never beside its use, issued before the use it serves; a copy out
// only of an object in DRAM), the DSMA arguments are exactly the late reads,
// kernel and copy times follow the model, and the period search is never
// worse than the median; bad options say what is wrong.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "autoswap_programs.hpp"
#include "cachedarrays/plan/schedule/redl.hpp"
#include "test_support.hpp"

namespace ca = cachedarrays;
using ca::plan::MovePlan;
using ca::plan::Program;
using ca::plan::RedlOptions;
using ca::plan::RedlPlan;
using ca::plan::TierCosts;

namespace {

using test::R, test::W;

using test::autoswap::program_of;
using test::autoswap::Use;

TierCosts flat_costs(const Program& p, double seconds, double penalty, double out_gbps, double in_gbps) {
  TierCosts c;
  for (const auto& kernel : p.kernels()) {
    c.fast_seconds.push_back(seconds);
    c.slow_penalty.emplace_back(kernel.args.size(), penalty);
  }
  c.to_slow_gbps = out_gbps;
  c.to_fast_gbps = in_gbps;
  return c;
}

// A random program with kernels of 1-3 arguments.
Program random_redl_program(test::Rng& rng, std::size_t n, std::size_t nk) {
  return test::autoswap::random_program(rng, n, nk, 1);
}

double sum(const std::vector<double>& v) {
  double s = 0;
  for (const double x : v) s += x;
  return s;
}

// The plan as AutoTM's executor would run it, replayed here from the
// program and the MovePlan alone (with the RedlPlan's times for the
// copies): which objects are in DRAM at each kernel, the DRAM they take,
// and whether every move and argument agrees with that.
struct Replay {
  std::vector<std::uint64_t> bytes;  // by kernel
  std::vector<std::string> errors;
};

Replay replay(const Program& p, const MovePlan& a, const RedlPlan& r) {
  const std::size_t n = p.objects().size(), nk = p.kernels().size();
  Replay out;
  const auto fail = [&](const std::string& what) { out.errors.push_back(what); };
  std::vector<std::vector<ca::plan::TierMove>> async_at(nk), out_after(nk);
  for (const auto& m : a.moves) {
    if (m.asynchronous)
      async_at[m.kernel].push_back(m);
    else if (!m.to_fast)
      out_after[m.kernel].push_back(m);
    else
      fail("a synchronous move in of object " + std::to_string(m.object) + " (ReDL makes none)");
  }
  std::vector<bool> created_in_dram(n, false);
  for (std::uint32_t o = 0; o < n; ++o) {
    if (p.uses(o).empty()) continue;
    const std::uint32_t k = p.uses(o).front();
    for (std::size_t j = 0; j < p.kernels()[k].args.size(); ++j) {
      if (p.kernels()[k].args[j].object == o) created_in_dram[o] = a.in_fast[k][j];
    }
  }
  // The arrival of each object's last copy in (for one held at the start:
  // the previous iteration's last, or none).
  constexpr double never = -std::numeric_limits<double>::infinity();
  std::vector<double> last_in(n, never);
  for (const auto& m : r.moves) {
    if (m.to_fast) last_in[m.object] = m.end - r.modeled_seconds;
  }
  std::vector<bool> held(n, false);
  std::vector<double> arrival(n, never);
  const auto iteration = [&](bool check) {
    for (std::uint32_t o = 0; o < n; ++o) arrival[o] = held[o] ? last_in[o] : never;
    for (const auto& step : p.steps()) {
      if (step.kind == ca::plan::StepKind::create) held[step.index] = created_in_dram[step.index];
      if (step.kind == ca::plan::StepKind::retire) held[step.index] = false;
      if (step.kind != ca::plan::StepKind::kernel) continue;
      const std::uint32_t k = step.index;
      const auto& args = p.kernels()[k].args;
      const auto is_arg = [&](std::uint32_t o) {
        return std::any_of(args.begin(), args.end(), [&](const auto& x) { return x.object == o; });
      };
      const std::string at = " at kernel " + std::to_string(k);
      std::size_t mi = 0;
      for (const auto& m : async_at[k]) {
        if (check && is_arg(m.object)) fail("a move of object " + std::to_string(m.object) + " beside its use" + at);
        if (m.to_fast) {
          if (check && held[m.object])
            fail("a move in of object " + std::to_string(m.object) + " already in DRAM" + at);
          held[m.object] = true;
          // Its time: the RedlMove at the same place in the list.
          for (; mi < r.moves.size(); ++mi) {
            const auto& rm = r.moves[mi];
            if (rm.kernel == k && rm.object == m.object && rm.to_fast) break;
          }
          if (mi < r.moves.size()) arrival[m.object] = r.moves[mi].end;
        } else if (check && !held[m.object]) {
          fail("a move out of object " + std::to_string(m.object) + " not in DRAM" + at);
        }
      }
      for (std::size_t j = 0; j < args.size(); ++j) {
        const std::uint32_t o = args[j].object;
        if (!check) {
          if (a.in_fast[k][j]) held[o] = true;  // the executor's synchronous move (first iteration only)
          continue;
        }
        const std::string arg = "argument " + std::to_string(j) + " (object " + std::to_string(o) + ")" + at;
        if (a.in_fast[k][j] && !held[o]) fail(arg + " is in DRAM without a move");
        if (a.in_fast[k][j] && arrival[o] > r.kernel_start[k] + 1e-12) fail(arg + " is in DRAM before it arrives");
        if (!a.in_fast[k][j] && held[o]) {
          // DSMA: only a read, and only while the copy in is still going.
          if (!r.dsma[k][j]) fail(arg + " is in PMM while in DRAM, not marked DSMA");
          if (args[j].access != R) fail(arg + " is a DSMA write");
          if (!(arrival[o] > r.kernel_start[k])) fail(arg + " is DSMA but its copy arrived");
        }
        if (r.dsma[k][j] && (a.in_fast[k][j] || !held[o])) fail(arg + " is marked DSMA without a copy in flight");
      }
      if (check) {
        std::uint64_t b = 0;
        for (std::uint32_t o = 0; o < n; ++o) b += held[o] ? p.objects()[o].bytes : 0;
        out.bytes.push_back(b);
      }
      for (const auto& m : async_at[k]) {
        if (!m.to_fast) held[m.object] = false;
      }
      for (const auto& m : out_after[k]) {
        if (check && !held[m.object])
          fail("a synchronous move out of object " + std::to_string(m.object) + " not in DRAM" + at);
        held[m.object] = false;
      }
    }
    for (std::uint32_t o = 0; o < n; ++o) {
      if (!p.objects()[o].persistent) held[o] = false;
    }
  };
  iteration(false);  // from nothing: persistent objects end where the plan leaves them
  iteration(true);
  return out;
}

// The model's times: each kernel its DRAM time plus the penalties of its
// arguments in PMM, one after the other (a kernel may wait, never overlap
// the one before); copies on the executor's channels (copy_channels.hpp,
// one lane here): the mover's copies one at a time, each channel one copy at
// a time (a synchronous write-back included), each copy its bytes over the
// bandwidth, never before it is issued.
void check_times(const Program& p, const TierCosts& c, const RedlPlan& r) {
  double previous_end = 0;
  for (std::size_t k = 0; k < p.kernels().size(); ++k) {
    double expected = c.fast_seconds[k];
    for (std::size_t j = 0; j < p.kernels()[k].args.size(); ++j) expected += r.in_fast[k][j] ? 0 : c.slow_penalty[k][j];
    CHECK(r.kernel_end[k] - r.kernel_start[k] == doctest::Approx(expected));
    CHECK(r.kernel_start[k] >= previous_end - 1e-12);
    previous_end = r.kernel_end[k];
  }
  CHECK(r.modeled_seconds >= previous_end - 1e-12);
  CHECK(r.modeled_seconds >= r.all_fast_seconds - 1e-9);
  CHECK(r.modeled_seconds == doctest::Approx(r.all_fast_seconds + r.wait_seconds + [&] {
          double penalties = 0;
          for (std::size_t k = 0; k < p.kernels().size(); ++k) {
            for (std::size_t j = 0; j < p.kernels()[k].args.size(); ++j)
              penalties += r.in_fast[k][j] ? 0 : c.slow_penalty[k][j];
          }
          return penalties;
        }()));
  REQUIRE(c.copy_lanes == 1);
  double lane = -std::numeric_limits<double>::infinity();
  double in_channel = lane, out_channel = lane;
  for (const auto& m : r.moves) {
    if (m.bytes == 0) continue;
    const double gbps = m.to_fast ? c.to_fast_gbps : c.to_slow_gbps;
    CHECK(m.end - m.start == doctest::Approx(static_cast<double>(m.bytes) / (gbps * 1e9)));
    CHECK(m.start >= m.issue - 1e-12);
    double& channel = m.to_fast ? in_channel : out_channel;
    CHECK(m.start >= channel - 1e-9);
    channel = m.end;
    if (m.asynchronous) {
      CHECK(m.start >= lane - 1e-9);
      lane = m.end;
    }
  }
}

std::vector<std::uint32_t> objects_of(const std::vector<std::uint32_t>& v) { return v; }

}  // namespace

TEST_CASE("redl: liveness counts the layers between the first and the last use; short-lived is at most one") {
  // P persistent, used by kernels 0 and 5; X by 0 and 1; Y by 1 and 2; Z by
  // 3; Q persistent, used by 2 and retired after it.
  const Program p =
      program_of({{100, true}, {100, false}, {100, false}, {100, false}, {100, true}},
                 {{{0, R}, {1, W}}, {{1, R}, {2, W}}, {{2, R}, {4, R}}, {{3, W}}, {}, {{0, W}}}, {{4, 2}});
  SUBCASE("a layer is a kernel") {
    const auto l = ca::plan::redl_liveness(p, {});
    REQUIRE(l.size() == 5);
    CHECK(l[0].survives);
    CHECK(l[0].layers == 6);
    CHECK(!l[0].short_lived);  // outlives the iteration
    CHECK(l[1].first_use == 0);
    CHECK(l[1].last_use == 1);
    CHECK(l[1].layers == 2);
    CHECK(l[1].kernels == 2);
    CHECK(!l[1].short_lived);
    CHECK(!l[2].short_lived);
    CHECK(l[3].layers == 1);
    CHECK(l[3].short_lived);
    CHECK(!l[4].survives);  // retired in the iteration
    CHECK(l[4].short_lived);
  }
  SUBCASE("a layer is two kernels") {
    RedlOptions o;
    o.kernels_per_layer = 2;
    CHECK(ca::plan::redl_layers(p, o) == std::vector<std::uint32_t>{0, 0, 1, 1, 2, 2});
    const auto l = ca::plan::redl_liveness(p, o);
    CHECK(l[1].layers == 1);  // kernels 0 and 1: one layer
    CHECK(l[1].short_lived);
    CHECK(l[2].first_layer == 0);
    CHECK(l[2].last_layer == 1);
    CHECK(!l[2].short_lived);
    CHECK(l[0].layers == 3);
    o.short_lived_layers = 2;
    CHECK(ca::plan::redl_liveness(p, o)[2].short_lived);
    CHECK(!ca::plan::redl_liveness(p, o)[0].short_lived);  // persistent: never
  }
  SUBCASE("named layers") {
    RedlOptions o;
    o.layer_starts = {0, 3};
    CHECK(ca::plan::redl_layers(p, o) == std::vector<std::uint32_t>{0, 0, 0, 1, 1, 1});
    const auto l = ca::plan::redl_liveness(p, o);
    CHECK(l[1].short_lived);
    CHECK(l[2].short_lived);
    CHECK(l[3].short_lived);
    CHECK(l[0].layers == 2);
  }
  SUBCASE("the plan reports the same liveness; the short-lived objects are held, not moved") {
    RedlOptions o;
    o.fast_limit = 1000;
    o.min_bytes = 0;
    const RedlPlan r = ca::plan::redl_plan(p, flat_costs(p, 1, 0.5, 1e-6, 1e-6), o);
    CHECK(r.liveness[3].short_lived);
    CHECK(r.layers == 6);
    for (const auto& m : r.moves) CHECK(m.object != 3);
    CHECK(r.in_fast[3][0]);
  }
}

TEST_CASE("redl: a limit at the peak keeps everything in DRAM at the all-DRAM time") {
  test::Rng rng(14);
  for (int i = 0; i < 60; ++i) {
    CAPTURE(i);
    const Program p = random_redl_program(rng, rng.between(3, 10), rng.between(3, 14));
    const TierCosts c = test::autoswap::random_costs(rng, p);
    RedlOptions o;
    o.fast_limit = p.max_live();
    o.min_bytes = rng.percent(50) ? 0 : 500;
    o.kernels_per_layer = static_cast<std::uint32_t>(rng.between(1, 3));
    const RedlPlan r = ca::plan::redl_plan(p, c, o);
    CHECK(r.moves.empty());
    CHECK(r.dsma_arguments == 0);
    for (const auto& row : r.in_fast) {
      for (const bool x : row) CHECK(x);
    }
    CHECK(r.modeled_seconds == doctest::Approx(sum(c.fast_seconds)));
    CHECK(r.modeled_seconds == doctest::Approx(r.all_fast_seconds));
    CHECK(r.wait_seconds == 0.0);
    CHECK(r.search.size() == 1);  // the median meets both constraints: the search stops there
    for (std::size_t k = 0; k < r.fast_bytes.size(); ++k) CHECK(r.fast_bytes[k] <= p.live_bytes()[k]);
    CHECK(r.peak_fast_bytes <= o.fast_limit);
  }
}

TEST_CASE(
    "redl: a copy in is issued at the start of the previous period (or further ahead, if asked); late, a read is DSMA "
    "and a write waits") {
  // Six kernels of 1 s (0.5 s more per argument in PMM). A (1000 B,
  // persistent) is read by kernel 0, B (1000 B, persistent) used by kernel
  // 4; the fast tier holds one of them. Periods of two kernels: [0,2),
  // [2,4), [4,6).
  const auto make = [](ca::Access b_access) {
    return program_of({{1000, true}, {1000, true}}, {{{0, R}}, {}, {}, {}, {{1, b_access}}, {}});
  };
  RedlOptions o;
  o.fast_limit = 1000;
  o.min_bytes = 0;
  o.period_layers = 2;
  o.alignment = 0;

  SUBCASE("in time") {
    // B's copy is issued when period [2,4) starts, at 2.5 s (kernel 0 read
    // A from PMM: A would have to come back at the end of the iteration,
    // where B's copy out holds the fast tier), and takes 1 s: it has
    // arrived at 4.5 s when kernel 4 starts. Its copy out at kernel 5 is
    // free (B was only read).
    const Program p = make(R);
    const RedlPlan r = ca::plan::redl_plan(p, flat_costs(p, 1, 0.5, 1e-6, 1e-6), o);
    CHECK(r.period_layers == 2);
    REQUIRE(r.moves.size() == 2);
    CHECK(r.moves[0].object == 1);
    CHECK(r.moves[0].to_fast);
    CHECK(r.moves[0].asynchronous);
    CHECK(r.moves[0].kernel == 2);
    CHECK(r.moves[0].use == 4);
    CHECK(r.moves[0].issue == doctest::Approx(2.5));
    CHECK(r.moves[0].end == doctest::Approx(3.5));
    CHECK(r.moves[1].object == 1);
    CHECK(!r.moves[1].to_fast);
    CHECK(r.moves[1].kernel == 5);
    CHECK(r.moves[1].bytes == 0);
    CHECK(!r.in_fast[0][0]);  // A
    CHECK(r.in_fast[4][0]);   // B
    CHECK(r.dsma_arguments == 0);
    CHECK(r.modeled_seconds == doctest::Approx(6.5));
    CHECK(r.all_fast_seconds == doctest::Approx(6.0));
    CHECK(r.all_slow_seconds == doctest::Approx(7.0));
    CHECK(r.peak_fast_bytes == 1000);
  }
  SUBCASE("late: DSMA") {
    // At 0.4 KB/s the copy takes 2.5 s: issued at 2.5 s, it arrives at 5 s,
    // after kernel 4 starts (4.5 s), which reads B in place (0.5 s more).
    // B was never used in DRAM: dropping its fast copy costs nothing.
    const Program p = make(R);
    const RedlPlan r = ca::plan::redl_plan(p, flat_costs(p, 1, 0.5, 1e-6, 0.4e-6), o);
    REQUIRE(r.moves.size() == 2);
    CHECK(r.moves[0].end == doctest::Approx(5.0));
    CHECK(!r.in_fast[4][0]);
    CHECK(r.dsma[4][0]);
    CHECK(r.dsma_arguments == 1);
    CHECK(r.kernel_start[4] == doctest::Approx(4.5));
    CHECK(r.moves[1].bytes == 0);
    CHECK(r.modeled_seconds == doctest::Approx(7.0));
    CHECK(r.wait_seconds == 0.0);
  }
  SUBCASE("late by one period, in time when issued two periods ahead") {
    // The same slow copy (2.5 s), allowed from the start of period t-2
    // (RedlOptions::issue_periods): issued at kernel 0, where the fast tier
    // is free (A is read from PMM), it has arrived long before kernel 4.
    o.issue_periods = 2;
    const Program p = make(R);
    const RedlPlan r = ca::plan::redl_plan(p, flat_costs(p, 1, 0.5, 1e-6, 0.4e-6), o);
    REQUIRE(!r.moves.empty());
    CHECK(r.moves[0].object == 1);
    CHECK(r.moves[0].to_fast);
    CHECK(r.moves[0].kernel == 0);
    CHECK(r.moves[0].end <= r.kernel_start[4]);
    CHECK(r.in_fast[4][0]);
    CHECK(r.dsma_arguments == 0);
    CHECK(r.modeled_seconds == doctest::Approx(6.5));
    CHECK(r.peak_fast_bytes <= 1000);
  }
  SUBCASE("late: a write waits, then its copy out is paid at the end") {
    // Kernel 4 writes B: it waits for the copy until 5 s and runs in DRAM
    // to 6 s; kernel 5 to 7 s; B's copy out (1 s, issued at 6 s) ends at 7 s.
    const Program p = make(W);
    const RedlPlan r = ca::plan::redl_plan(p, flat_costs(p, 1, 0.5, 1e-6, 0.4e-6), o);
    REQUIRE(r.moves.size() == 2);
    CHECK(r.in_fast[4][0]);
    CHECK(!r.dsma[4][0]);
    CHECK(r.kernel_start[4] == doctest::Approx(5.0));
    CHECK(r.moves[1].bytes == 1000);
    CHECK(r.moves[1].start == doctest::Approx(6.0));
    CHECK(r.moves[1].end == doctest::Approx(7.0));
    CHECK(r.modeled_seconds == doctest::Approx(7.0));
    CHECK(r.wait_seconds == doctest::Approx(0.5));
  }
  SUBCASE("room for both: nothing moves") {
    o.fast_limit = 2000;
    const Program p = make(R);
    const RedlPlan r = ca::plan::redl_plan(p, flat_costs(p, 1, 0.5, 1e-6, 0.4e-6), o);
    CHECK(r.moves.empty());
    CHECK(r.modeled_seconds == doctest::Approx(6.0));
  }
}

TEST_CASE("redl: Algorithm 1 leaves the shortest-lived objects in the slow tier when the fast region is tight") {
  // Kernel 0 uses S1 (600 B), kernels 0 and 1 use S2 (600 B) — in one layer
  // of two kernels both are short-lived. The fast tier holds 1000 B: S1,
  // which lives one kernel, is the victim.
  const Program p = program_of({{600, false}, {600, false}}, {{{0, W}, {1, W}}, {{1, R}}});
  RedlOptions o;
  o.fast_limit = 1000;
  o.kernels_per_layer = 2;
  const RedlPlan r = ca::plan::redl_plan(p, flat_costs(p, 1, 0.5, 1e-6, 1e-6), o);
  CHECK(r.liveness[0].short_lived);
  CHECK(r.liveness[1].short_lived);
  CHECK(r.idle_victims == objects_of({0}));
  CHECK(!r.in_fast[0][0]);
  CHECK(r.in_fast[0][1]);
  CHECK(r.in_fast[1][0]);
  CHECK(r.moves.empty());
  CHECK(r.periods.size() == 1);
  CHECK(r.periods[0].idle_region == 600);
  CHECK(r.modeled_seconds == doctest::Approx(2.5));
}

TEST_CASE(
    "redl: where a period's objects do not all fit, the room goes by first use, or by slow-tier cost when asked") {
  // Five kernels of 1 s. A (6000 B) is written by kernel 0 and read by
  // kernel 3; B (6000 B) is written by kernel 3 and read by kernel 4. The
  // fast tier holds one of them, and nothing during kernel 1: A goes out
  // after kernel 0. Periods of one kernel: period 3 needs A (a copy in)
  // and B (created), which do not both fit.
  const Program p = program_of({{6000, false}, {6000, false}}, {{{0, W}}, {}, {}, {{0, R}, {1, W}}, {{1, R}}});
  TierCosts costs = flat_costs(p, 1, 0.5, 1e-5, 1e-5);
  costs.slow_penalty[3] = {0.2, 1.0};  // kernel 3 reads A from PMM for 0.2 s more, writes B there for 1 s more
  RedlOptions o;
  o.fast_limit = 10000;
  o.kernel_limits = {10000, 0};
  o.min_bytes = 0;
  o.period_layers = 1;
  o.alignment = 0;
  const auto moves_in = [](const RedlPlan& r) {
    std::vector<std::uint32_t> in;
    for (const auto& m : r.moves) {
      if (m.to_fast) in.push_back(m.object);
    }
    return in;
  };

  // The paper's order: A, first in kernel 3's arguments, is copied in; B
  // is written to PMM and read there by kernel 4.
  const RedlPlan first = ca::plan::redl_plan(p, costs, o);
  CHECK(first.in_fast[3] == std::vector<bool>{true, false});
  CHECK(!first.in_fast[4][0]);
  CHECK(moves_in(first) == objects_of({0}));
  CHECK(first.status.find("room by slow-tier cost") == std::string::npos);

  // By slow-tier cost: B's write would cost 1 s in PMM against A's read
  // 0.2 s, both per 6000 B; B is created in DRAM and stays for kernel 4, A
  // is read in place and never copied in.
  o.room_by_slow_cost = true;
  const RedlPlan by_cost = ca::plan::redl_plan(p, costs, o);
  CHECK(by_cost.in_fast[3] == std::vector<bool>{false, true});
  CHECK(by_cost.in_fast[4][0]);
  CHECK(moves_in(by_cost).empty());
  test::check_contains(by_cost.status, "room by slow-tier cost");
  CHECK(by_cost.modeled_seconds == doctest::Approx(first.modeled_seconds - 1.3));

  for (const RedlPlan* r : {&first, &by_cost}) {
    CHECK(replay(p, ca::plan::redl_autotm_plan(*r), *r).errors.empty());
    check_times(p, costs, *r);
  }
}

TEST_CASE(
    "redl: on random programs the plan keeps the limit, its moves are consistent and DSMA is exactly the late reads") {
  test::Rng rng(2024);
  std::uint32_t moves_in = 0, writes_back = 0, dsma_total = 0, waited = 0, lowered = 0;
  for (int i = 0; i < 300; ++i) {
    CAPTURE(i);
    const Program p = random_redl_program(rng, rng.between(3, 12), rng.between(3, 24));
    const TierCosts c = test::autoswap::random_costs(rng, p);
    RedlOptions o;
    o.fast_limit = std::max<std::uint64_t>(1, p.max_live() * rng.between(10, 100) / 100);
    o.min_bytes = rng.percent(70) ? 0 : 400;
    o.kernels_per_layer = static_cast<std::uint32_t>(rng.between(1, 3));
    const std::uint32_t layers = ca::plan::redl_layers(p, o).back() + 1;
    if (rng.percent(50)) o.period_layers = static_cast<std::uint32_t>(rng.between(1, layers));
    // Half the programs keep a lower limit at some kernels (as the policy's
    // heap fitting asks where the heap fragments).
    if (rng.percent(50)) {
      o.kernel_limits.resize(rng.between(0, p.kernels().size()));
      for (std::uint64_t& l : o.kernel_limits) {
        l = rng.percent(50) ? o.fast_limit : o.fast_limit * rng.between(30, 100) / 100;
      }
    }
    // Some issue their copies in further ahead than the previous period.
    if (rng.percent(30)) o.issue_periods = static_cast<std::uint32_t>(rng.between(2, 4));
    const auto limit_at = [&](std::size_t k) {
      return k < o.kernel_limits.size() ? std::min(o.kernel_limits[k], o.fast_limit) : o.fast_limit;
    };
    CAPTURE(o.fast_limit);
    CAPTURE(o.period_layers);
    const RedlPlan r = ca::plan::redl_plan(p, c, o);
    const MovePlan a = ca::plan::redl_autotm_plan(r);
    REQUIRE(a.in_fast.size() == p.kernels().size());
    REQUIRE(a.moves.size() == r.moves.size());

    const Replay rep = replay(p, a, r);
    for (const std::string& e : rep.errors) FAIL_CHECK(e);
    REQUIRE(rep.bytes.size() == p.kernels().size());
    for (std::size_t k = 0; k < rep.bytes.size(); ++k) {
      CAPTURE(k);
      CHECK(rep.bytes[k] <= limit_at(k));
      CHECK(rep.bytes[k] == r.fast_bytes[k]);
      CHECK(r.kernel_limits.at(k) == limit_at(k));
      CHECK(a.kernel_limits.at(k) == limit_at(k));
      lowered += limit_at(k) < o.fast_limit && rep.bytes[k] > 0 ? 1 : 0;
    }
    CHECK(r.peak_fast_bytes <= o.fast_limit);

    // Every copy in is issued before the use it serves (in the next
    // iteration for one that wraps around).
    for (const auto& m : r.moves) {
      if (!m.to_fast) continue;
      CHECK(m.asynchronous);
      if (m.wraps) {
        CHECK(m.use == p.uses(m.object).front());
        CHECK(p.uses(m.object).back() < m.kernel);
      } else {
        CHECK(m.kernel < m.use);
        CHECK(p.next_use(m.object, m.kernel) == m.use);
      }
    }
    // Short-lived objects never move.
    for (const auto& m : r.moves) CHECK(!r.liveness[m.object].short_lived);
    std::uint32_t dsma = 0;
    for (const auto& row : r.dsma) dsma += static_cast<std::uint32_t>(std::count(row.begin(), row.end(), true));
    CHECK(dsma == r.dsma_arguments);
    check_times(p, c, r);
    for (const auto& m : r.moves) (m.to_fast ? moves_in : writes_back) += 1;
    dsma_total += dsma;
    waited += r.wait_seconds > 0 ? 1 : 0;
  }
  // The programs exercise what is checked above.
  CHECK(moves_in > 100);
  CHECK(writes_back > 100);
  CHECK(dsma_total > 10);
  CHECK(waited > 10);
  CHECK(lowered > 100);
}

TEST_CASE("redl: the period search starts at the median and is never worse than it") {
  test::Rng rng(77);
  for (int i = 0; i < 80; ++i) {
    CAPTURE(i);
    const Program p = random_redl_program(rng, rng.between(4, 12), rng.between(6, 30));
    const TierCosts c = test::autoswap::random_costs(rng, p);
    RedlOptions o;
    o.fast_limit = std::max<std::uint64_t>(1, p.max_live() * rng.between(10, 70) / 100);
    o.min_bytes = 0;
    const RedlPlan searched = ca::plan::redl_plan(p, c, o);
    const std::uint32_t median = (searched.layers + 1) / 2;
    REQUIRE(!searched.search.empty());
    CHECK(searched.search.front().period_layers == median);
    o.period_layers = median;
    const RedlPlan at_median = ca::plan::redl_plan(p, c, o);
    CHECK(at_median.modeled_seconds == searched.search.front().modeled_seconds);
    CHECK(searched.modeled_seconds <= at_median.modeled_seconds);
    double best = std::numeric_limits<double>::infinity();
    for (const auto& t : searched.search) {
      best = std::min(best, t.modeled_seconds);
      CHECK(t.period_layers >= 1);
      CHECK(t.period_layers <= searched.layers);
    }
    CHECK(searched.modeled_seconds == best);
    // Round r tries median + r, then median - r.
    for (std::size_t j = 1; j < searched.search.size(); ++j) {
      const auto d = static_cast<std::int64_t>(searched.search[j].period_layers) - static_cast<std::int64_t>(median);
      const auto prev =
          static_cast<std::int64_t>(searched.search[j - 1].period_layers) - static_cast<std::int64_t>(median);
      CHECK(std::abs(d) >= std::abs(prev));
    }
  }
}

TEST_CASE("redl: bad options and costs say what is wrong and what is allowed") {
  const Program p = program_of({{100, true}, {200, false}}, {{{0, R}, {1, W}}, {{1, R}}});
  const TierCosts c = flat_costs(p, 1, 0.5, 1, 1);
  RedlOptions o;
  o.fast_limit = 1000;
  const auto message = [&](RedlOptions bad, TierCosts costs) {
    return test::invalid_argument_of([&] { (void)ca::plan::redl_plan(p, costs, bad); });
  };
  RedlOptions bad = o;
  bad.fast_limit = 0;
  test::check_contains(message(bad, c), "fast_limit is 0");
  bad = o;
  bad.kernels_per_layer = 0;
  test::check_contains(message(bad, c), "kernels_per_layer is 0");
  bad = o;
  bad.layer_starts = {1};
  test::check_contains(message(bad, c), "starts at kernel 0");
  bad.layer_starts = {0, 1, 1};
  test::check_contains(message(bad, c), "ascend strictly");
  bad.layer_starts = {0, 2};
  test::check_contains(message(bad, c), "2 kernels");
  bad = o;
  bad.period_layers = 3;
  test::check_contains(message(bad, c), "2 layers");
  bad = o;
  bad.short_lived_layers = 0;
  test::check_contains(message(bad, c), "short_lived_layers is 0");
  bad = o;
  bad.issue_periods = 0;
  test::check_contains(message(bad, c), "issue_periods is 0");
  bad = o;
  bad.alignment = 12;
  test::check_contains(message(bad, c), "power of two");
  TierCosts wrong = c;
  wrong.fast_seconds.pop_back();
  test::check_contains(message(o, wrong), "one of each per kernel");
  wrong = c;
  wrong.slow_penalty[0].pop_back();
  test::check_contains(message(o, wrong), "one per argument");
  wrong = c;
  wrong.slow_penalty[1][0] = -1;
  test::check_contains(message(o, wrong), "finite and >= 0");
  wrong = c;
  wrong.to_fast_gbps = 0;
  test::check_contains(message(o, wrong), "finite and > 0");
  RedlOptions zero;
  zero.kernels_per_layer = 0;
  test::check_contains(test::invalid_argument_of([&] { (void)ca::plan::redl_layers(p, zero); }), "kernels_per_layer");
}
