// The offline dynamic storage allocation problem (plan/offsets/dsa_problem.hpp): its
// lower bound max-live, the checker of offset plans, problems from a program
// and from MiniMalloc's CSV (with errors naming line and column), and the
// two offset planners — Sekiyama et al.'s best-fit offset lines and SmartPool/AutoSwap's
// SmartPool — run as one typed suite on hand-made, random and MiniMalloc's
// instances (data/dsa).
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <tuple>
#include <vector>

#include "cachedarrays/error.hpp"
#include "cachedarrays/plan/offsets/best_fit_offsets.hpp"
#include "cachedarrays/plan/offsets/dsa_problem.hpp"
#include "cachedarrays/plan/offsets/smartpool_offsets.hpp"
#include "cachedarrays/plan/program/program.hpp"
#include "dsa_instances.hpp"
#include "test_support.hpp"

namespace ca = cachedarrays;
using ca::plan::DsaBuffer;
using ca::plan::DsaProblem;
using ca::plan::OffsetPlan;
using ca::plan::Program;
using ca::plan::StepKind;

namespace {

// The planners, as types for TEST_CASE_TEMPLATE (each reported on its own).
// `minimalloc_bound`: the largest footprint / max-live the planner may reach on
// the MiniMalloc instances (see the test of those).
struct BestFit {
  static OffsetPlan plan(const DsaProblem& p) { return ca::plan::best_fit_offsets(p); }
  static constexpr double minimalloc_bound = 1.45;
};
struct SmartPoolBestFit {
  static OffsetPlan plan(const DsaProblem& p) { return ca::plan::smartpool_offsets(p, ca::plan::HoleFit::best); }
  static constexpr double minimalloc_bound = 1.60;
};
struct SmartPoolFirstFit {
  static OffsetPlan plan(const DsaProblem& p) { return ca::plan::smartpool_offsets(p, ca::plan::HoleFit::first); }
  static constexpr double minimalloc_bound = 1.45;
};

// Four buffers: a (100 B) during [0, 4), b (50 B) [2, 6), c (70 B) [4, 8),
// d (30 B) [6, 8). Alive together: a+b 150 during [2, 4), b+c 120 during
// [4, 6), c+d 100 during [6, 8); a and c only touch at 4 (half-open).
DsaProblem four_buffers(std::uint64_t alignment = 1) {
  return DsaProblem({{100, 0, 4}, {50, 2, 6}, {70, 4, 8}, {30, 6, 8}}, alignment);
}

// A random instance: n buffers over a horizon of up to 60 moments, mostly
// small sizes with a few large ones (as a training iteration has), and
// sometimes everything alive at once.
DsaProblem random_problem(test::Rng& rng) {
  const std::uint64_t n = rng.between(1, 150);
  const auto horizon = static_cast<std::uint32_t>(rng.between(1, 60));
  const bool all_at_once = rng.percent(5);
  std::vector<DsaBuffer> buffers;
  for (std::uint64_t i = 0; i < n; ++i) {
    DsaBuffer b;
    b.size = rng.percent(20) ? rng.between(1, 1 << 20) : rng.between(1, 4096);
    b.start = all_at_once ? 0 : static_cast<std::uint32_t>(rng.below(horizon));
    b.end = all_at_once ? horizon : static_cast<std::uint32_t>(rng.between(b.start + 1, horizon));
    buffers.push_back(b);
  }
  return DsaProblem(std::move(buffers), rng.percent(50) ? 1 : 64);
}

}  // namespace

// ---- the problem -------------------------------------------------------------

TEST_CASE("dsa: max-live is the peak of the bytes alive, lifetimes half-open") {
  CHECK(four_buffers().max_live() == 150);
  CHECK(four_buffers().size() == 4);
  CHECK(DsaProblem().max_live() == 0);
  // Back to back, never together: the larger alone.
  CHECK(DsaProblem({{10, 0, 1}, {20, 1, 2}, {5, 2, 3}}).max_live() == 20);
  // All at once: the sum.
  CHECK(DsaProblem({{10, 0, 3}, {20, 1, 3}, {5, 2, 3}}).max_live() == 35);
  // Alignment rounds sizes for placement, not the lower bound.
  CHECK(four_buffers(64).max_live() == 150);
  CHECK(four_buffers(64).aligned_size(0) == 128);
  CHECK(four_buffers(64).aligned_size(3) == 64);
}

TEST_CASE("dsa: a malformed problem is refused naming the buffer and what is wrong") {
  using test::check_contains;
  using test::invalid_argument_of;
  check_contains(invalid_argument_of([] { (void)DsaProblem({{8, 0, 1}, {0, 0, 1}}); }), "buffer 1 has size 0");
  check_contains(invalid_argument_of([] { (void)DsaProblem({{8, 3, 3}}); }), "buffer 0 starts at 3 and ends at 3");
  check_contains(invalid_argument_of([] { (void)DsaProblem({{8, 5, 2}}); }), "start must be before end");
  check_contains(invalid_argument_of([] { (void)DsaProblem({{8, 0, 1}}, 0); }), "alignment 0");
  check_contains(invalid_argument_of([] { (void)DsaProblem({{1ull << 62, 0, 1}, {1ull << 62, 0, 1}}); }), "buffer 1");
}

TEST_CASE("dsa: check_plan passes a valid plan and names two buffers that overlap") {
  const DsaProblem p = four_buffers();
  // a and c never live together, so they may share address 0; b and d sit
  // above them.
  const OffsetPlan valid{{0, 100, 0, 70}, 150};
  CHECK_NOTHROW(ca::plan::check_plan(p, valid));
  CHECK(ca::plan::footprint_of(p, valid.offsets) == 150);

  using test::check_contains;
  using test::invalid_argument_of;
  // b at 60 overlaps a's [0, 100) during [2, 4).
  const std::string overlap = invalid_argument_of([&] { ca::plan::check_plan(p, {{0, 60, 0, 70}, 110}); });
  check_contains(overlap, "buffers 0 and 1");
  check_contains(overlap, "[2, 4)");
  check_contains(overlap, "[60, 110)");
  // d overlaps c during [6, 8): placed above c's offset, then below it.
  check_contains(invalid_argument_of([&] { ca::plan::check_plan(p, {{0, 100, 0, 20}, 150}); }), "buffers 2 and 3");
  check_contains(invalid_argument_of([&] { ca::plan::check_plan(p, {{0, 100, 20, 0}, 150}); }), "buffers 2 and 3");
  // The same offset, the same time.
  check_contains(invalid_argument_of([&] { ca::plan::check_plan(p, {{0, 0, 100, 200}, 230}); }), "buffers 0 and 1");
  check_contains(invalid_argument_of([&] { ca::plan::check_plan(p, {{0, 100, 0}, 150}); }), "3 offsets for 4");
  check_contains(invalid_argument_of([&] {
                   ca::plan::check_plan(p, {{0, 100, 0, 70}, 200});
                 }),
                 "the footprint says 200 bytes but the buffers reach 150");
  const DsaProblem aligned = four_buffers(64);
  check_contains(invalid_argument_of([&] {
                   ca::plan::check_plan(aligned, {{0, 100, 0, 70}, 150});
                 }),
                 "not a multiple of the alignment 64");
  CHECK_NOTHROW(ca::plan::check_plan(aligned, {{0, 128, 0, 192}, 222}));
}

TEST_CASE("dsa: from_program — each object from its creation to its retirement, in program steps") {
  // Objects: 0 persistent (100 B, never retired), 1 (200 B) and 2 (50 B)
  // created and retired, 3 persistent (8 B) retired by the iteration, 4
  // (16 B) created and never used, 5 (24 B) created and kept for a later
  // iteration.
  // Steps: 0 create 1, 1 kernel 0, 2 create 2, 3 create 4, 4 kernel 1,
  // 5 retire 1, 6 retire 4, 7 kernel 2, 8 retire 2, 9 retire 3, 10 create 5,
  // 11 kernel 3.
  const Program program({{100, true}, {200, false}, {50, false}, {8, true}, {16, false}, {24, false}},
                        {{"k0", {{0, 100, ca::Access::read}, {1, 200, ca::Access::write}}},
                         {"k1", {{1, 200, ca::Access::read}, {2, 50, ca::Access::write}}},
                         {"k2", {{0, 100, ca::Access::read}, {2, 50, ca::Access::read}, {3, 8, ca::Access::read}}},
                         {"k3", {{5, 24, ca::Access::write}}}},
                        {{StepKind::create, 1},
                         {StepKind::kernel, 0},
                         {StepKind::create, 2},
                         {StepKind::create, 4},
                         {StepKind::kernel, 1},
                         {StepKind::retire, 1},
                         {StepKind::retire, 4},
                         {StepKind::kernel, 2},
                         {StepKind::retire, 2},
                         {StepKind::retire, 3},
                         {StepKind::create, 5},
                         {StepKind::kernel, 3}});
  const DsaProblem p = DsaProblem::from_program(program);
  // Time t is the moment after step t - 1; the iteration ends at 13.
  const std::vector<DsaBuffer> expected{{100, 0, 13}, {200, 1, 6}, {50, 3, 9}, {8, 0, 10}, {16, 4, 7}, {24, 11, 13}};
  CHECK(p.buffers() == expected);
  CHECK(p.alignment() == 64);
  // During kernel 1 (time 5): 100 + 200 + 50 + 8 + 16. The program, which
  // counts objects at kernels only, agrees here.
  CHECK(p.max_live() == 374);
  CHECK(program.max_live() == 374);
  CHECK(DsaProblem::from_program(program, 1).alignment() == 1);

  // Both planners place it validly at 64-byte offsets.
  for (const OffsetPlan& plan : {ca::plan::best_fit_offsets(p), ca::plan::smartpool_offsets(p)}) {
    CHECK_NOTHROW(ca::plan::check_plan(p, plan));
    CHECK(plan.footprint >= p.max_live());
  }
}

TEST_CASE("dsa: from_program on a recorded iteration — max-live at least the program's") {
  ca::Runtime rt(test::two_tiers());
  rt.start_trace();
  auto w = rt.array<float>(16);
  for (int i = 0; i < 2; ++i) {
    rt.begin_iteration();
    auto t = rt.array<float>(32);
    rt.kernel(ca::reads(w), ca::writes(t), [](auto in, auto out) { out[0] = in[0]; });
    auto o = rt.array<float>(8);
    rt.kernel(ca::reads(t), ca::writes(o), [](auto in, auto out) { out[0] = in[0]; });
    t.retire();
    o.retire();
    rt.collect();
  }
  rt.stop_trace();
  const Program program = Program::from_trace(*rt.trace());
  const DsaProblem p = DsaProblem::from_program(program);
  REQUIRE(p.size() == program.objects().size());
  CHECK(p.buffers()[0].start == 0);  // w is persistent
  CHECK(p.max_live() >= program.max_live());
  CHECK(p.max_live() == 64 + 128 + 32);
}

// ---- CSV ---------------------------------------------------------------------

TEST_CASE("dsa: CSV in MiniMalloc's format — read, written back, columns in any order") {
  const DsaProblem p = DsaProblem::from_csv_text("buffer,start,end,size\n0,0,4,100\n1,2,6,50\r\n\n2,4,8,70\n3,6,8,30");
  CHECK(p.buffers() == four_buffers().buffers());
  CHECK(p.alignment() == 1);
  CHECK(DsaProblem::from_csv_text(p.to_csv()).buffers() == p.buffers());
  CHECK(DsaProblem::from_csv_text("size,end,buffer,start\n100,4,x,0\n").buffers() ==
        std::vector<DsaBuffer>{{100, 0, 4}});
  CHECK(DsaProblem::from_csv_text("buffer,start,end,size\n", 64).size() == 0);

  const test::ScratchPath scratch("instance.csv");
  {
    std::ofstream out(scratch.path);
    out << p.to_csv();
  }
  CHECK(DsaProblem::from_csv(scratch.path.string(), 8).buffers() == p.buffers());
  CHECK(DsaProblem::from_csv(scratch.path.string(), 8).alignment() == 8);
}

TEST_CASE("dsa: a malformed CSV line is refused naming its line and column") {
  using test::check_contains;
  const auto error = [](const std::string& text) {
    return test::invalid_argument_of([&] { (void)DsaProblem::from_csv_text(text); });
  };
  const std::string head = "buffer,start,end,size\n";
  check_contains(error(""), "no header");
  check_contains(error("buffer,start,stop,size\n"), "line 1: column 3 (\"stop\") is not a column");
  check_contains(error("buffer,start,end\n"), "the header has no column \"size\"");
  check_contains(error("buffer,start,end,size,start\n"), "column 5 (\"start\") names a column a second time");
  check_contains(error(head + "0,0,4,100\n1,2,x6,50\n"), "line 3: column 3 (end): \"x6\" is not an unsigned integer");
  check_contains(error(head + "0,0,4,-5\n"), "line 2: column 4 (size): \"-5\" is not an unsigned integer");
  check_contains(error(head + "0,,4,5\n"), "line 2: column 2 (start): \"\" is not an unsigned integer");
  check_contains(error(head + "0,0,4,5,9\n"), "line 2: 5 fields; the header names 4");
  check_contains(error(head + "0,0,4\n"), "line 2: 3 fields");
  check_contains(error(head + "0,7,7,5\n"), "line 2: column 3 (end): 7 is not after start 7");
  check_contains(error(head + "0,0,1,0\n"), "line 2: column 4 (size): 0");
  check_contains(error(head + "0,0,4294967296,5\n"), "column 3 (end): \"4294967296\" is larger than 4294967295");
  check_contains(error(head + ",0,1,5\n"), "column 1 (buffer) is empty");
  // Blank lines are skipped but still counted.
  check_contains(error(head + "\n\n0,0,1,zero\n"), "line 4: column 4 (size)");

  const test::ScratchPath scratch("bad-instance.csv");
  CHECK_THROWS_AS((void)DsaProblem::from_csv(scratch.path.string()), ca::heap_error);
  {
    std::ofstream out(scratch.path);
    out << head << "0,0,1,0\n";
  }
  check_contains(test::invalid_argument_of([&] { (void)DsaProblem::from_csv(scratch.path.string()); }),
                 "(in '" + scratch.path.string() + "')");
}

// ---- the planners ------------------------------------------------------------

TEST_CASE(
    "offset planners: best-fit follows Sekiyama et al. §3.2 — longest lifetime at the lowest line, lifting when none "
    "fits") {
  // a [0, 10) goes first at 0 (the longest lifetime); then the line over
  // [0, 10) at 10 takes b (tie with c broken by index), and the lower line
  // over [5, 10) takes c at 10.
  const DsaProblem fig({{10, 0, 10}, {20, 0, 5}, {20, 5, 10}});
  const OffsetPlan plan = ca::plan::best_fit_offsets(fig);
  CHECK(plan.offsets == std::vector<std::uint64_t>{0, 10, 10});
  CHECK(plan.footprint == 30);

  // a [0, 4) and b [2, 6): a is placed at 0; the line over [4, 6) at 0 holds
  // nothing that fits, so it is lifted to 10 and merged; b goes at 10.
  const DsaProblem lift({{10, 0, 4}, {10, 2, 6}});
  CHECK(ca::plan::best_fit_offsets(lift).offsets == std::vector<std::uint64_t>{0, 10});

  // Alignment: sizes rounded up on the skyline.
  const DsaProblem aligned({{10, 0, 4}, {10, 0, 4}}, 64);
  CHECK(ca::plan::best_fit_offsets(aligned).offsets == std::vector<std::uint64_t>{0, 64});
  CHECK(ca::plan::best_fit_offsets(aligned).footprint == 74);
  CHECK(ca::plan::best_fit_offsets(DsaProblem()) == OffsetPlan{});
}

TEST_CASE("offset planners: SmartPool (SmartPool/AutoSwap §III-C) — largest first, best-fit or first-fit hole") {
  // 100 [0, 3) at 0; 90 [0, 10) above it at 100; 60 [0, 3) on top at 190.
  // Then 50 [3, 10) sees holes [0, 100) (size 100) and [190, 250) (size 60,
  // the pool above its only neighbour): best-fit takes the smaller, first-fit
  // the lower.
  const DsaProblem p({{100, 0, 3}, {90, 0, 10}, {60, 0, 3}, {50, 3, 10}});
  const OffsetPlan best = ca::plan::smartpool_offsets(p);
  CHECK(best.offsets == std::vector<std::uint64_t>{0, 100, 190, 190});
  CHECK(best.footprint == 250);
  const OffsetPlan first = ca::plan::smartpool_offsets(p, ca::plan::HoleFit::first);
  CHECK(first.offsets == std::vector<std::uint64_t>{0, 100, 190, 0});
  // No hole large enough: the pool grows above the highest neighbour,
  // aligned.
  const DsaProblem grow({{100, 0, 2}, {30, 1, 3}}, 64);
  CHECK(ca::plan::smartpool_offsets(grow).offsets == std::vector<std::uint64_t>{0, 128});
  CHECK(ca::plan::smartpool_offsets(DsaProblem()) == OffsetPlan{});
}

TEST_CASE_TEMPLATE("offset planners: valid plans at or above max-live on random instances", Planner, BestFit,
                   SmartPoolBestFit, SmartPoolFirstFit) {
  test::Rng rng(test::test_seed(20240612));
  INFO("seed " << rng.seed());
  for (int round = 0; round < 300; ++round) {
    const DsaProblem p = random_problem(rng);
    INFO("round " << round << ": " << p.size() << " buffers, alignment " << p.alignment());
    const OffsetPlan plan = Planner::plan(p);
    REQUIRE_NOTHROW(ca::plan::check_plan(p, plan));
    CHECK(plan.footprint >= p.max_live());
    // Never worse than stacking every buffer.
    std::uint64_t stacked = 0;
    for (std::size_t i = 0; i < p.size(); ++i) stacked += p.aligned_size(i);
    CHECK(plan.footprint <= stacked);
    // Buffers alive all the time together leave nothing to share: exactly
    // their sum (aligned but the top one).
    if (std::all_of(p.buffers().begin(), p.buffers().end(), [&](const DsaBuffer& b) {
          return b.start == p.buffers()[0].start && b.end == p.buffers()[0].end;
        })) {
      CHECK(plan.footprint > stacked - p.alignment());
    }
  }
}

TEST_CASE_TEMPLATE("offset planners: valid plans within a bound of max-live on the MiniMalloc instances", Planner,
                   BestFit, SmartPoolBestFit, SmartPoolFirstFit) {
  const std::filesystem::path dir = test::dsa_instances_dir();
  REQUIRE(std::filesystem::is_directory(dir));
  // These instances are built tight (max-live equals the capacity for most,
  // MiniMalloc ASPLOS 2024): greedy placement does far worse on them than
  // the 1.0005-1.016 SmartPool reports on CNN training (SmartPool/AutoSwap Table I).
  // The bounds (Planner::minimalloc_bound) leave a few percent above the worst
  // footprint / max-live each planner reaches on these files.
  int instances = 0;
  for (const char letter : std::string("ABCDEF")) {
    const std::filesystem::path file = dir / (std::string(1, letter) + ".1048576.csv");
    INFO(file.string());
    REQUIRE(std::filesystem::exists(file));
    const DsaProblem p = DsaProblem::from_csv(file.string());
    const OffsetPlan plan = Planner::plan(p);
    REQUIRE_NOTHROW(ca::plan::check_plan(p, plan));
    const double ratio = static_cast<double>(plan.footprint) / static_cast<double>(p.max_live());
    INFO("footprint / max-live " << ratio);
    CHECK(ratio >= 1.0);
    CHECK(ratio <= Planner::minimalloc_bound);
    ++instances;
  }
  CHECK(instances == 6);
}

TEST_CASE("dsa: the MiniMalloc instances' max-live is the one their README gives") {
  const std::filesystem::path dir = test::dsa_instances_dir();
  REQUIRE(std::filesystem::is_directory(dir));
  // The instances' own table (data/dsa/README.md): buffers and max-live; `end`
  // exclusive (read as inclusive, as MiniMalloc's converter reads a column
  // named "end", A's max-live would be 1704960, past the capacity the
  // instance is solvable in).
  const std::vector<std::tuple<char, std::size_t, std::uint64_t>> table{{'A', 154, 1048576}, {'B', 170, 1048576},
                                                                        {'C', 203, 1039360}, {'D', 213, 986112},
                                                                        {'E', 215, 1048576}, {'F', 296, 1048576}};
  for (const auto& [letter, buffers, max_live] : table) {
    const DsaProblem p = DsaProblem::from_csv((dir / (std::string(1, letter) + ".1048576.csv")).string());
    CHECK(p.size() == buffers);
    CHECK(p.max_live() == max_live);
  }
}
