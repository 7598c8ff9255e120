// The exact offset planner (plan/offsets/dsa_mip.hpp): Sekiyama et al.'s MIP (1)-(6)
// solved by Cbc. Its plans are valid and never above a heuristic's, its
// optimum matches an exhaustive search on tiny instances and the known
// optimum of hand-made ones, and a search stopped at its time limit still
// returns a valid plan with the gap it left.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "cachedarrays/error.hpp"
#include "cachedarrays/plan/offsets/best_fit_offsets.hpp"
#include "cachedarrays/plan/offsets/dsa_mip.hpp"
#include "cachedarrays/plan/offsets/dsa_problem.hpp"
#include "cachedarrays/plan/offsets/smartpool_offsets.hpp"
#include "dsa_test_support.hpp"
#include "test_support.hpp"
#include "wall_clock.hpp"

namespace ca = cachedarrays;
using ca::plan::DsaBuffer;
using ca::plan::DsaProblem;
using ca::plan::MipOptions;
using ca::plan::MipResult;
using ca::plan::OffsetPlan;

namespace {

// Every buffer on top of the previous one: a valid plan, as bad as it gets,
// so that the search has work to do from it.
OffsetPlan stacked(const DsaProblem& p) {
  OffsetPlan plan;
  std::uint64_t top = 0;
  for (std::size_t i = 0; i < p.size(); ++i) {
    plan.offsets.push_back(top);
    top += p.aligned_size(i);
  }
  plan.footprint = ca::plan::footprint_of(p, plan.offsets);
  return plan;
}

MipOptions from(const OffsetPlan& warm_start) {
  MipOptions o;
  o.warm_start = warm_start;
  return o;
}

// `o` with a time limit that only guards against a hang (wall_clock.hpp): a
// test that needs the proven optimum must not depend on how fast, or how
// loaded, this machine is.
MipOptions to_the_optimum(MipOptions o = {}) {
  o.time_limit_seconds = test::generous_seconds(o.time_limit_seconds);
  return o;
}

// The optimum by brute force, independent of the MIP: every order of every
// pair of buffers alive together, each buffer as low as the ones ordered
// below it allow (an optimal plan is one of these: lowering a buffer onto
// what is below it keeps a plan valid). Cyclic orders are skipped.
std::uint64_t exhaustive_optimum(const DsaProblem& p) {
  const std::vector<DsaBuffer>& b = p.buffers();
  const std::size_t n = b.size();
  std::vector<std::pair<std::size_t, std::size_t>> pairs;
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = i + 1; j < n; ++j) {
      if (b[i].start < b[j].end && b[j].start < b[i].end) pairs.emplace_back(i, j);
    }
  }
  REQUIRE(pairs.size() <= 16);
  std::uint64_t best = std::numeric_limits<std::uint64_t>::max();
  for (std::uint64_t orientation = 0; orientation < (std::uint64_t{1} << pairs.size()); ++orientation) {
    // Bellman-Ford style relaxation: n rounds settle any acyclic order; a
    // change in round n + 1 means a cycle.
    std::vector<std::uint64_t> offset(n, 0);
    bool changed = true;
    for (std::size_t round = 0; round <= n && changed; ++round) {
      changed = false;
      for (std::size_t k = 0; k < pairs.size(); ++k) {
        auto [lo, hi] = pairs[k];
        if ((orientation >> k) & 1) std::swap(lo, hi);
        if (offset[hi] < offset[lo] + p.aligned_size(lo)) {
          offset[hi] = offset[lo] + p.aligned_size(lo);
          changed = true;
        }
      }
    }
    if (changed) continue;  // a cycle
    best = std::min(best, ca::plan::footprint_of(p, offset));
  }
  return best;
}

// A random instance of `n` buffers over a short horizon, sizes 1 to
// `max_units` units of `unit` bytes.
DsaProblem small_problem(test::Rng& rng, std::uint64_t n, std::uint64_t unit, std::uint64_t alignment,
                         std::uint64_t max_units = 8) {
  const auto horizon = static_cast<std::uint32_t>(rng.between(2, 8));
  return test::small_dsa_problem(rng, n, unit, alignment, max_units, horizon);
}

void check_result(const DsaProblem& p, const MipResult& r) {
  REQUIRE_NOTHROW(ca::plan::check_plan(p, r.plan));
  CHECK(r.plan.footprint >= p.max_live());
  CHECK(r.lower_bound >= static_cast<double>(p.max_live()));
  CHECK(r.lower_bound <= static_cast<double>(r.plan.footprint));
  CHECK(r.gap >= 0);
  CHECK(r.seconds >= 0);
  CHECK(!r.status.empty());
  if (r.optimal) {
    CHECK(r.gap == 0);
    CHECK(r.lower_bound == static_cast<double>(r.plan.footprint));
  }
}

// 60 buffers of odd sizes over 30 moments: the heuristics reach max-live,
// but from the stacked plan Cbc's search does not (it leaves a gap even
// given many seconds), so a limit of 50 ms stops it with a gap.
DsaProblem hard_problem() {
  test::Rng rng(7);
  std::vector<DsaBuffer> buffers;
  for (int i = 0; i < 60; ++i) {
    DsaBuffer b;
    b.size = rng.between(1, 97) * 1000 + rng.between(0, 999);
    b.start = static_cast<std::uint32_t>(rng.below(30));
    b.end = static_cast<std::uint32_t>(rng.between(b.start + 1, b.start + 12));
    buffers.push_back(b);
  }
  return DsaProblem(std::move(buffers));
}

}  // namespace

TEST_CASE("dsa mip: two buffers apart in time share offset 0 — the footprint is the larger, proven optimal") {
  const DsaProblem p({{100, 0, 2}, {300, 2, 4}});
  // From the heuristics, which find it: max-live proves it without a search.
  const MipResult easy = ca::plan::mip_offsets(p);
  check_result(p, easy);
  CHECK(easy.plan.footprint == 300);
  CHECK(easy.optimal);
  // From both stacked (400 bytes): Cbc must find and prove it.
  const MipResult searched = ca::plan::mip_offsets(p, from(stacked(p)));
  check_result(p, searched);
  CHECK(searched.plan.offsets == std::vector<std::uint64_t>{0, 0});
  CHECK(searched.plan.footprint == 300);
  CHECK(searched.optimal);
  CHECK(searched.gap == 0);
}

TEST_CASE("dsa mip: three buffers alive together — the footprint is their sum, proven optimal") {
  const DsaProblem p({{64, 0, 3}, {128, 1, 3}, {32, 2, 5}});
  // A warm start with a hole between them: 64 + 32 free + 128 + 32.
  const OffsetPlan holey{{0, 96, 224}, 256};
  REQUIRE_NOTHROW(ca::plan::check_plan(p, holey));
  const MipResult r = ca::plan::mip_offsets(p, from(holey));
  check_result(p, r);
  CHECK(r.plan.footprint == 224);
  CHECK(r.optimal);
  CHECK(r.lower_bound == 224);
}

TEST_CASE("dsa mip: the alignment — offsets multiples of it, the top buffer's own size counts") {
  // 100 and 30 bytes alive together, alignment 64: 30 below and 100 on top
  // reach 64 + 100 = 164; 100 below (taking 128) and 30 on top 158, the
  // optimum, above max-live (130).
  const DsaProblem p({{100, 0, 2}, {30, 1, 3}}, 64);
  const MipResult r = ca::plan::mip_offsets(p, from(OffsetPlan{{64, 0}, 164}));
  check_result(p, r);
  CHECK(r.plan.offsets == std::vector<std::uint64_t>{0, 128});
  CHECK(r.plan.footprint == 158);
  CHECK(r.optimal);
  CHECK(r.lower_bound == 158);
  // Nine 8-byte buffers together, aligned to 64: eight take 64 bytes each,
  // the top one 8; the bound counting the alignment proves it as soon as
  // Cbc finds it, where Cbc's own bound would branch through the orders of
  // nine buffers.
  const DsaProblem nine(std::vector<DsaBuffer>(9, DsaBuffer{8, 0, 1}), 64);
  OffsetPlan holey = stacked(nine);  // with a hole of 64 bytes under the top one
  holey.offsets.back() += 64;
  holey.footprint += 64;
  const MipResult packed = ca::plan::mip_offsets(nine, from(holey));
  check_result(nine, packed);
  CHECK(packed.plan.footprint == 8 * 64 + 8);
  CHECK(packed.optimal);
}

TEST_CASE("dsa mip: an empty problem and a single buffer") {
  const MipResult none = ca::plan::mip_offsets(DsaProblem());
  CHECK(none.plan == OffsetPlan{});
  CHECK(none.optimal);
  const DsaProblem one({{42, 3, 4}});
  const MipResult r = ca::plan::mip_offsets(one);
  check_result(one, r);
  CHECK(r.plan.footprint == 42);
  CHECK(r.optimal);
}

TEST_CASE("dsa mip: the optimum of an exhaustive search on tiny random instances") {
  test::Rng rng(test::test_seed(20240613));
  INFO("seed " << rng.seed());
  int above_max_live = 0;
  for (int round = 0; round < 60; ++round) {
    const DsaProblem p = small_problem(rng, rng.between(2, 6), rng.percent(50) ? 1 : 24, rng.percent(30) ? 16 : 1);
    INFO("round " << round << ": " << p.to_csv() << "alignment " << p.alignment());
    if (ca::plan::colliding_pairs(p) > 12) continue;
    const std::uint64_t optimum = exhaustive_optimum(p);
    // From the stacked plan, so that Cbc searches rather than the heuristics
    // answering.
    const MipResult r = ca::plan::mip_offsets(p, to_the_optimum(from(stacked(p))));
    check_result(p, r);
    CHECK(r.optimal);
    CHECK(r.plan.footprint == optimum);
    if (optimum > p.max_live()) ++above_max_live;
  }
  MESSAGE(above_max_live << " of the instances have an optimum above max-live");
}

TEST_CASE("dsa mip: on small random instances the optimum is valid, at least max-live and at most every heuristic") {
  test::Rng rng(test::test_seed(20240614));
  INFO("seed " << rng.seed());
  int searched = 0;
  for (int round = 0; round < 60; ++round) {
    const DsaProblem p =
        small_problem(rng, rng.between(1, 12), rng.percent(50) ? 1 : 4096, rng.percent(50) ? 1 : 64, 100);
    INFO("round " << round << ": " << p.size() << " buffers, alignment " << p.alignment());
    const MipResult r = ca::plan::mip_offsets(p, to_the_optimum());
    check_result(p, r);
    CHECK(r.optimal);
    if (r.status.find("Cbc") != std::string::npos) ++searched;
    CHECK(r.plan.footprint <= ca::plan::best_fit_offsets(p).footprint);
    CHECK(r.plan.footprint <= ca::plan::smartpool_offsets(p, ca::plan::HoleFit::best).footprint);
    CHECK(r.plan.footprint <= ca::plan::smartpool_offsets(p, ca::plan::HoleFit::first).footprint);
  }
  // The heuristics reach the lower bound on most; the rest went to Cbc.
  MESSAGE(searched << " of the instances needed Cbc's search");
  CHECK(searched > 0);
}

TEST_CASE("dsa mip: a search stopped at its time limit returns a valid plan, no worse than its start, and the gap") {
  const DsaProblem p = hard_problem();
  const OffsetPlan start = stacked(p);
  MipOptions o = from(start);
  o.time_limit_seconds = 0.05;
  const MipResult r = ca::plan::mip_offsets(p, o);
  check_result(p, r);
  CHECK_FALSE(r.optimal);
  CHECK(r.gap > 0);
  CHECK(r.plan.footprint <= start.footprint);
  test::check_contains(r.status, "time limit");
}

TEST_CASE("dsa mip: a relative gap stops the search once the plan is within it") {
  const DsaProblem p = hard_problem();
  MipOptions o = from(stacked(p));
  o.relative_gap = 0.8;  // met by the stacked start already: Cbc stops before searching
  o.time_limit_seconds = 30;
  const MipResult r = ca::plan::mip_offsets(p, o);
  check_result(p, r);
  CHECK_FALSE(r.optimal);
  CHECK(r.gap <= 0.8);
  test::check_contains(r.status, "relative gap 0.8");
}

TEST_CASE("dsa mip: bad options and a warm start that is no solution are refused, saying what is wrong") {
  using test::check_contains;
  using test::invalid_argument_of;
  const DsaProblem p({{100, 0, 2}, {50, 1, 3}});
  MipOptions o;
  o.time_limit_seconds = 0;
  check_contains(invalid_argument_of([&] { (void)ca::plan::mip_offsets(p, o); }), "time_limit_seconds");
  o.time_limit_seconds = 1;
  o.relative_gap = 1;
  check_contains(invalid_argument_of([&] { (void)ca::plan::mip_offsets(p, o); }), "relative_gap");
  o.relative_gap = 0;
  o.warm_start = OffsetPlan{{0, 60}, 110};  // overlaps during [1, 2)
  const std::string message = invalid_argument_of([&] { (void)ca::plan::mip_offsets(p, o); });
  check_contains(message, "warm start");
  check_contains(message, "buffers 0 and 1");
}

TEST_CASE("dsa mip: colliding_pairs counts the pairs alive together, half-open lifetimes") {
  CHECK(ca::plan::colliding_pairs(DsaProblem()) == 0);
  CHECK(ca::plan::colliding_pairs(DsaProblem({{1, 0, 1}, {1, 1, 2}, {1, 2, 3}})) == 0);
  CHECK(ca::plan::colliding_pairs(DsaProblem({{1, 0, 3}, {1, 1, 3}, {1, 2, 3}})) == 3);
  CHECK(ca::plan::colliding_pairs(DsaProblem({{100, 0, 4}, {50, 2, 6}, {70, 4, 8}, {30, 6, 8}})) == 3);
}
