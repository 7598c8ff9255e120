// The exact search over canonical placements (plan/offsets/dsa_search.hpp, after
// MiniMalloc): every plan it finds is valid and within the capacity; what it
// proves infeasible is (a capacity below max-live, below the MIP's proven
// optimum); its minimum equals the MIP's proven optimum on small random
// instances and never exceeds a heuristic's; its limits stop it and it says so.
#include <doctest/doctest.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "cachedarrays/error.hpp"
#include "cachedarrays/plan/offsets/best_fit_offsets.hpp"
#include "cachedarrays/plan/offsets/dsa_mip.hpp"
#include "cachedarrays/plan/offsets/dsa_problem.hpp"
#include "cachedarrays/plan/offsets/dsa_search.hpp"
#include "cachedarrays/plan/offsets/smartpool_offsets.hpp"
#include "dsa_instances.hpp"
#include "dsa_test_support.hpp"
#include "test_support.hpp"
#include "wall_clock.hpp"

namespace ca = cachedarrays;
using ca::plan::DsaBuffer;
using ca::plan::DsaProblem;
using ca::plan::FootprintSearchResult;
using ca::plan::SearchOptions;
using ca::plan::SearchResult;
using ca::plan::SearchStatus;

namespace {

// A random instance of `n` buffers over a short horizon, sizes 1 to
// `max_units` units of `unit` bytes.
DsaProblem small_search_problem(test::Rng& rng, std::uint64_t n, std::uint64_t unit, std::uint64_t alignment,
                                std::uint64_t max_units, std::uint32_t horizon) {
  return test::small_dsa_problem(rng, n, unit, alignment, max_units, horizon);
}

// A found plan is a solution within the capacity; the other outcomes carry
// no plan.
void check_search(const DsaProblem& p, std::uint64_t capacity, const SearchResult& r) {
  CHECK(r.seconds >= 0);
  if (r.status != SearchStatus::found) {
    CHECK(r.plan.offsets.empty());
    return;
  }
  REQUIRE_NOTHROW(ca::plan::check_plan(p, r.plan));
  CHECK(r.plan.footprint <= capacity);
  CHECK(r.plan.footprint >= p.max_live());
}

void check_minimum(const DsaProblem& p, const FootprintSearchResult& r) {
  REQUIRE_NOTHROW(ca::plan::check_plan(p, r.plan));
  CHECK(r.lower_bound >= p.max_live());
  CHECK(r.lower_bound <= r.plan.footprint);
  CHECK(r.optimal == (r.lower_bound == r.plan.footprint));
  CHECK(r.seconds >= 0);
}

SearchResult search(const DsaProblem& p, std::uint64_t capacity) {
  SearchOptions o;
  // A hang guard (wall_clock.hpp): the tests decide found or infeasible,
  // which a slow or loaded machine must not turn into "stopped".
  o.time_limit_seconds = test::generous_seconds(10);
  SearchResult r = ca::plan::search_offsets(p, capacity, o);
  check_search(p, capacity, r);
  return r;
}

}  // namespace

TEST_CASE("dsa search: three buffers alive together fit in their sum, not one byte less") {
  const DsaProblem p({{64, 0, 3}, {128, 1, 3}, {32, 2, 5}});
  const SearchResult fits = search(p, 224);
  CHECK(fits.status == SearchStatus::found);
  CHECK(fits.plan.footprint == 224);
  const SearchResult below = search(p, 223);
  CHECK(below.status == SearchStatus::infeasible);
  CHECK(std::string(ca::plan::to_string(below.status)) == "infeasible");
  // A time limit past what the clock holds is no limit.
  SearchOptions forever;
  forever.time_limit_seconds = 1e300;
  CHECK(ca::plan::search_offsets(p, 224, forever).status == SearchStatus::found);
}

TEST_CASE("dsa search: a capacity below max-live is proven infeasible without searching") {
  const DsaProblem p({{100, 0, 2}, {50, 1, 3}, {70, 2, 4}});
  REQUIRE(p.max_live() == 150);
  const SearchResult r = search(p, 149);
  CHECK(r.status == SearchStatus::infeasible);
  CHECK(r.nodes == 0);
  // A single buffer larger than the capacity, alone in time.
  CHECK(search(DsaProblem({{10, 0, 1}}), 9).status == SearchStatus::infeasible);
}

TEST_CASE("dsa search: the alignment — offsets multiples of it, the top buffer's own size counts") {
  // 100 and 30 bytes alive together, alignment 64: 100 below (taking 128)
  // and 30 on top reach 158, the optimum (30 below and 100 on top: 164).
  const DsaProblem p({{100, 0, 2}, {30, 1, 3}}, 64);
  const SearchResult r = search(p, 158);
  CHECK(r.status == SearchStatus::found);
  CHECK(r.plan.offsets == std::vector<std::uint64_t>{0, 128});
  CHECK(search(p, 157).status == SearchStatus::infeasible);
  const FootprintSearchResult m = ca::plan::minimize_footprint(p);
  check_minimum(p, m);
  CHECK(m.plan.footprint == 158);
  CHECK(m.optimal);
  // Nine 8-byte buffers together, aligned to 64: eight take 64 bytes each,
  // the top one 8. The bound counting the alignment (520, not max-live 72)
  // proves it at once, and a capacity of 519 without a search.
  const DsaProblem nine(std::vector<DsaBuffer>(9, DsaBuffer{8, 0, 1}), 64);
  const FootprintSearchResult packed = ca::plan::minimize_footprint(nine);
  check_minimum(nine, packed);
  CHECK(packed.plan.footprint == 8 * 64 + 8);
  CHECK(packed.lower_bound == 8 * 64 + 8);
  CHECK(packed.optimal);
  const SearchResult tight = search(nine, 519);
  CHECK(tight.status == SearchStatus::infeasible);
  CHECK(tight.nodes == 0);
}

TEST_CASE("dsa search: an empty problem fits anywhere, and buffers apart in time share offset 0") {
  const SearchResult none = search(DsaProblem(), 0);
  CHECK(none.status == SearchStatus::found);
  CHECK(none.plan.footprint == 0);
  const DsaProblem apart({{100, 0, 2}, {300, 2, 4}, {200, 5, 6}});
  const SearchResult r = search(apart, 300);
  CHECK(r.status == SearchStatus::found);
  CHECK(r.plan.offsets == std::vector<std::uint64_t>{0, 0, 0});
}

TEST_CASE("dsa search: on small random instances the minimum is the MIP's proven optimum, at most every heuristic") {
  test::Rng rng(test::test_seed(20251125));
  INFO("seed " << rng.seed());
  int above_max_live = 0;
  for (int round = 0; round < 40; ++round) {
    const DsaProblem p =
        small_search_problem(rng, rng.between(2, 10), rng.percent(50) ? 1 : 1000, rng.percent(30) ? 64 : 1, 12,
                             static_cast<std::uint32_t>(rng.between(3, 8)));
    INFO("round " << round << ": " << p.to_csv() << "alignment " << p.alignment());
    // Time limits that only guard against a hang (wall_clock.hpp): both
    // answers must be proven, however slow or loaded this machine is.
    ca::plan::MipOptions mip_options;
    mip_options.time_limit_seconds = test::generous_seconds(10);
    const ca::plan::MipResult mip = ca::plan::mip_offsets(p, mip_options);
    REQUIRE(mip.optimal);
    SearchOptions to_the_minimum;
    to_the_minimum.time_limit_seconds = test::generous_seconds(to_the_minimum.time_limit_seconds);
    const FootprintSearchResult r = ca::plan::minimize_footprint(p, to_the_minimum);
    check_minimum(p, r);
    CHECK(r.optimal);
    CHECK(r.plan.footprint == mip.plan.footprint);
    CHECK(r.plan.footprint <= ca::plan::best_fit_offsets(p).footprint);
    CHECK(r.plan.footprint <= ca::plan::smartpool_offsets(p, ca::plan::HoleFit::best).footprint);
    CHECK(r.plan.footprint <= ca::plan::smartpool_offsets(p, ca::plan::HoleFit::first).footprint);
    // The decision at the optimum and one byte below it.
    CHECK(search(p, mip.plan.footprint).status == SearchStatus::found);
    CHECK(search(p, mip.plan.footprint - 1).status == SearchStatus::infeasible);
    if (mip.plan.footprint > p.max_live()) ++above_max_live;
  }
  MESSAGE(above_max_live << " of the instances have an optimum above max-live");
  CHECK(above_max_live > 0);
}

TEST_CASE("dsa search: larger random instances — every plan found is valid and within the capacity") {
  test::Rng rng(test::test_seed(20251126));
  INFO("seed " << rng.seed());
  for (int round = 0; round < 20; ++round) {
    const DsaProblem p = small_search_problem(rng, rng.between(20, 80), 1024, rng.percent(50) ? 1 : 4096, 64,
                                              static_cast<std::uint32_t>(rng.between(10, 40)));
    INFO("round " << round << ": " << p.size() << " buffers, alignment " << p.alignment());
    SearchOptions o;
    o.time_limit_seconds = 0.2;
    const FootprintSearchResult r = ca::plan::minimize_footprint(p, o);
    check_minimum(p, r);
    CHECK(r.plan.footprint <= ca::plan::best_fit_offsets(p).footprint);
    const SearchResult at_best = ca::plan::search_offsets(p, r.plan.footprint, o);
    check_search(p, r.plan.footprint, at_best);
  }
}

TEST_CASE("dsa search: the node and time limits stop the search, and the result says so") {
  // 240 buffers of odd sizes, at max-live: the search neither finds this
  // one (seed 17) nor proves it infeasible in many seconds, so a limit of
  // 50 ms stops it. A stronger search may answer it one day: pick another
  // seed then (not seed 2, which MiniMalloc's per-part preorder answers at
  // once).
  test::Rng rng(17);
  std::vector<DsaBuffer> buffers;
  for (int i = 0; i < 240; ++i) {
    DsaBuffer b;
    b.size = rng.between(1, 97) * 1000 + rng.between(0, 999);
    b.start = static_cast<std::uint32_t>(rng.below(120));
    b.end = static_cast<std::uint32_t>(rng.between(b.start + 1, b.start + 40));
    buffers.push_back(b);
  }
  const DsaProblem p(std::move(buffers));
  SearchOptions o;
  o.node_limit = 1;
  const SearchResult one = ca::plan::search_offsets(p, p.max_live(), o);
  CHECK(one.status == SearchStatus::stopped);
  CHECK(one.nodes == 1);
  CHECK(one.plan.offsets.empty());

  o.node_limit = SearchOptions{}.node_limit;
  o.time_limit_seconds = 0.05;
  const SearchResult quick = ca::plan::search_offsets(p, p.max_live(), o);
  check_search(p, p.max_live(), quick);
  CHECK(quick.status == SearchStatus::stopped);
  CHECK(std::string(ca::plan::to_string(quick.status)) == "stopped");
  CHECK(quick.nodes > 1);
  CHECK(quick.seconds >= 0.05);  // the limit, not the search running out, ended it
  CHECK(quick.seconds < test::generous_seconds(0.5));

  // The whole minimisation keeps to the limit, its probes included.
  const FootprintSearchResult m = ca::plan::minimize_footprint(p, o);
  check_minimum(p, m);
  CHECK(m.probes >= 1);
  CHECK(m.seconds < test::generous_seconds(0.5));
}

TEST_CASE("dsa search: every MiniMalloc instance fits its capacity (E, at max-live, included)") {
  const std::filesystem::path dir = test::dsa_instances_dir();
  REQUIRE(std::filesystem::is_directory(dir));
  // The node limit, well above the placements any of these instances
  // needs, keeps the outcome independent of the machine's speed; the time
  // limit only stops a runaway. E stays within it only because each part of
  // a decomposition gets its own preorder (MiniMalloc's solver.cc SubSolve).
  SearchOptions o;
  o.node_limit = 20'000'000;
  o.time_limit_seconds = 600;
  // A build that is many times slower searches the four quicker instances:
  // the sanitizers look for memory errors, which the same code would make on
  // B and E, and the optimised build searches all six.
  const std::string letters = test::full_speed_build ? "ABCDEF" : "ACDF";
  for (const char letter : letters) {
    const std::filesystem::path file = dir / (std::string(1, letter) + ".1048576.csv");
    INFO(file.string());
    REQUIRE(std::filesystem::exists(file));
    const DsaProblem p = DsaProblem::from_csv(file.string());
    const SearchResult r = ca::plan::search_offsets(p, 1048576, o);
    check_search(p, 1048576, r);
    CHECK(r.status == SearchStatus::found);
  }
}

TEST_CASE("dsa search: bad options are refused, saying what is wrong and what is allowed") {
  using test::check_contains;
  using test::invalid_argument_of;
  const DsaProblem p({{100, 0, 2}, {50, 1, 3}});
  SearchOptions o;
  o.time_limit_seconds = 0;
  std::string message = invalid_argument_of([&] { (void)ca::plan::search_offsets(p, 200, o); });
  check_contains(message, "search_offsets: time_limit_seconds is 0");
  check_contains(message, "positive");
  o.time_limit_seconds = -1;
  check_contains(invalid_argument_of([&] { (void)ca::plan::minimize_footprint(p, o); }),
                 "minimize_footprint: time_limit_seconds");
  o.time_limit_seconds = 1;
  o.node_limit = 0;
  message = invalid_argument_of([&] { (void)ca::plan::search_offsets(p, 200, o); });
  check_contains(message, "node_limit is 0");
  check_contains(message, "at least 1");
}
