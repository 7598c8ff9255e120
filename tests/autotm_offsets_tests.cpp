// The offline packing of an AutoTM-form plan's DRAM stays
// (plan/offsets/autotm_offsets.hpp): the stays are the executor's allocations and
// frees, a persistent object's stay wraps around the iteration's end, no two
// stays held at the same time share a byte, and ReDL's fitting loop
// (policy::fit_to_heap_by_kernel) judges a plan by this packing.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "autoswap_programs.hpp"
#include "cachedarrays/plan/offsets/autotm_offsets.hpp"
#include "cachedarrays/plan/offsets/best_fit_offsets.hpp"
#include "cachedarrays/plan/schedule/autotm.hpp"
#include "cachedarrays/policy/autotm_policy.hpp"
#include "test_support.hpp"

namespace ca = cachedarrays;
using ca::plan::AutotmOffsets;
using ca::plan::AutotmStay;
using ca::plan::MovePlan;
using ca::plan::Program;
using ca::plan::StepKind;
using ca::plan::TierMove;

namespace {

using test::R, test::W;

// The online allocator puts d above b (256 bytes); packed ahead, b goes
// lowest and a, c and d above it (192).
using test::fragmenting_program;

MovePlan all_in_dram(const Program& p) {
  MovePlan plan;
  for (const auto& k : p.kernels()) plan.in_fast.emplace_back(k.args.size(), true);
  return plan;
}

bool held_at(const AutotmStay& s, std::uint32_t at) {
  return s.wraps ? (at >= s.start || at < s.end) : (at >= s.start && at < s.end);
}

// No two stays held at the same tick overlap in the heap; offsets aligned;
// the footprint, max-live and extents agree with the stays.
void check_packing(const AutotmOffsets& packed, std::uint64_t alignment) {
  std::uint32_t end_time = 1;
  for (const AutotmStay& s : packed.stays) end_time = std::max({end_time, s.start + 1, s.end + 1});
  std::uint64_t footprint = 0, max_live = 0;
  for (std::uint32_t at = 0; at < end_time; ++at) {
    std::vector<const AutotmStay*> alive;
    std::uint64_t live = 0;
    for (const AutotmStay& s : packed.stays) {
      if (!held_at(s, at)) continue;
      alive.push_back(&s);
      live += (s.bytes + alignment - 1) / alignment * alignment;
    }
    max_live = std::max(max_live, live);
    for (std::size_t i = 0; i < alive.size(); ++i) {
      for (std::size_t j = i + 1; j < alive.size(); ++j) {
        const AutotmStay& a = *alive[i];
        const AutotmStay& b = *alive[j];
        CAPTURE(at);
        CAPTURE(a.object);
        CAPTURE(b.object);
        CHECK((a.offset + a.bytes <= b.offset || b.offset + b.bytes <= a.offset));
      }
    }
  }
  for (const AutotmStay& s : packed.stays) {
    CHECK(s.offset % alignment == 0);
    footprint = std::max(footprint, s.offset + s.bytes);
  }
  CHECK(packed.footprint == footprint);
  CHECK(packed.max_live == max_live);
  CHECK(packed.footprint + alignment > packed.max_live);  // the stays held at max-live's tick lie side by side
  for (const std::uint64_t e : packed.extents) CHECK(e <= packed.footprint);
}

}  // namespace

TEST_CASE("autotm offsets: the stays of a plan packed ahead fit where the online allocator fragments") {
  const Program p = fragmenting_program();
  const MovePlan plan = all_in_dram(p);
  REQUIRE(ca::plan::autotm_dram_extents(p, plan, 64) == std::vector<std::uint64_t>{192, 256});
  const AutotmOffsets packed = ca::plan::autotm_dram_offsets(p, plan, 64);
  // Ticks: a, b, c taken at 1, 2, 3; kernel 0 at 4; a and c freed at 5 and
  // 6; d taken at 7; kernel 1 at 8; b and d freed at 9 and 10.
  REQUIRE(packed.stays.size() == 4);
  const auto stay = [&](std::uint32_t object) {
    return *std::find_if(packed.stays.begin(), packed.stays.end(),
                         [&](const AutotmStay& s) { return s.object == object; });
  };
  CHECK((stay(0).start == 1 && stay(0).end == 5 && stay(0).kernel == 0));
  CHECK((stay(1).start == 2 && stay(1).end == 9 && stay(1).kernel == 0));
  CHECK((stay(2).start == 3 && stay(2).end == 6));
  CHECK((stay(3).start == 7 && stay(3).end == 10 && stay(3).kernel == 1));
  for (const AutotmStay& s : packed.stays) CHECK(!s.wraps);
  // Best-fit offset lines: b (the longest) at 0, then a and d at 64, c at 128.
  CHECK(stay(1).offset == 0);
  CHECK(stay(0).offset == 64);
  CHECK(stay(3).offset == 64);
  CHECK(stay(2).offset == 128);
  CHECK(packed.footprint == 192);
  CHECK(packed.max_live == 192);
  CHECK(packed.extents == std::vector<std::uint64_t>{192, 192});
  check_packing(packed, 64);
}

TEST_CASE("autotm offsets: a persistent object the iteration's end leaves in DRAM wraps around, stacked lowest") {
  // P (persistent, 64 bytes) is read by kernels 0 and 2, moved out after
  // kernel 0 and in before kernel 2; X (128 bytes) lives for kernel 1 only.
  std::vector<ca::plan::ProgramObject> objects{{64, true}, {128, false}};
  std::vector<ca::plan::ProgramKernel> kernels{{"k0", {{0, 64, R}}}, {"k1", {{1, 128, W}}}, {"k2", {{0, 64, R}}}};
  std::vector<ca::plan::ProgramStep> steps{{StepKind::kernel, 0},
                                           {StepKind::create, 1},
                                           {StepKind::kernel, 1},
                                           {StepKind::retire, 1},
                                           {StepKind::kernel, 2}};
  const Program p(objects, kernels, steps);
  MovePlan plan = all_in_dram(p);
  plan.moves = {TierMove{0, 0, false, false}, TierMove{0, 2, true, false}};
  const AutotmOffsets packed = ca::plan::autotm_dram_offsets(p, plan, 64);
  // P is held from the start to its move out (tick 2) and from its move in
  // (tick 6) to the end: one stay, from 6 around to 2, at the bottom. X
  // (ticks 3 to 5) shares P's bytes while P is out.
  REQUIRE(packed.stays.size() == 2);
  const AutotmStay& x = packed.stays[0].object == 1 ? packed.stays[0] : packed.stays[1];
  const AutotmStay& persistent = packed.stays[0].object == 0 ? packed.stays[0] : packed.stays[1];
  CHECK(persistent.wraps);
  CHECK(persistent.start == 6);
  CHECK(persistent.end == 2);
  CHECK(persistent.kernel == 2);
  CHECK(persistent.offset == 0);
  CHECK(!x.wraps);
  CHECK(x.kernel == 1);
  CHECK(x.offset == 0);
  CHECK(packed.footprint == 128);
  CHECK(packed.extents == std::vector<std::uint64_t>{64, 128, 64});
  check_packing(packed, 64);

  // Kept in DRAM throughout, P holds its bytes the whole iteration, and X
  // goes above it.
  MovePlan kept = all_in_dram(p);
  const AutotmOffsets whole = ca::plan::autotm_dram_offsets(p, kept, 64);
  REQUIRE(whole.stays.size() == 2);
  CHECK(whole.footprint == 192);
  check_packing(whole, 64);
}

TEST_CASE("autotm offsets: random plans pack without two stays held at once sharing a byte") {
  std::mt19937_64 rng(test::test_seed(20261126));
  for (int round = 0; round < 40; ++round) {
    CAPTURE(round);
    // Persistent objects 0..P-1, first used by kernels 0..P-1; created
    // objects in creation order, each created before a kernel, retired
    // after a later one and used in between.
    const std::uint32_t nk = 6 + static_cast<std::uint32_t>(rng() % 10);
    const std::uint32_t np = 1 + static_cast<std::uint32_t>(rng() % 4);
    const std::uint32_t nc = static_cast<std::uint32_t>(rng() % 8);
    std::vector<ca::plan::ProgramObject> objects;
    std::vector<std::set<std::uint32_t>> uses(nk);
    for (std::uint32_t o = 0; o < np; ++o) {
      objects.push_back({64 * (1 + rng() % 5), true});
      uses[std::min(o, nk - 1)].insert(o);
      for (std::uint32_t k = o + 1; k < nk; ++k) {
        if (rng() % 3 == 0) uses[k].insert(o);
      }
    }
    std::vector<std::uint32_t> created_at, retired_after;
    std::uint32_t at = 0;
    for (std::uint32_t c = 0; c < nc; ++c) {
      at = std::min(nk - 1, at + static_cast<std::uint32_t>(rng() % 2));
      const std::uint32_t o = np + c;
      objects.push_back({64 * (1 + rng() % 5), false});
      created_at.push_back(at);
      retired_after.push_back(at + static_cast<std::uint32_t>(rng() % (nk - at)));
      for (std::uint32_t k = at; k <= retired_after.back(); ++k) {
        if (k == at || rng() % 2 == 0) uses[k].insert(o);
      }
    }
    std::vector<ca::plan::ProgramKernel> kernels;
    std::vector<ca::plan::ProgramStep> steps;
    for (std::uint32_t k = 0; k < nk; ++k) {
      ca::plan::ProgramKernel kernel{"k" + std::to_string(k), {}};
      for (const std::uint32_t o : uses[k]) kernel.args.push_back({o, objects[o].bytes, rng() % 2 == 0 ? R : W});
      if (kernel.args.empty()) kernel.args.push_back({0, objects[0].bytes, R});
      kernels.push_back(kernel);
      for (std::uint32_t c = 0; c < nc; ++c) {
        if (created_at[c] == k) steps.push_back({StepKind::create, np + c});
      }
      steps.push_back({StepKind::kernel, k});
      for (std::uint32_t c = 0; c < nc; ++c) {
        if (retired_after[c] == k) steps.push_back({StepKind::retire, np + c});
      }
    }
    const Program p(objects, kernels, steps);
    // Any placement and any moves: the stays follow whatever the plan says.
    MovePlan plan;
    for (const auto& k : p.kernels()) {
      plan.in_fast.emplace_back();
      for (std::size_t j = 0; j < k.args.size(); ++j) plan.in_fast.back().push_back(rng() % 3 != 0);
    }
    for (int m = 0; m < 6; ++m) {
      plan.moves.push_back(TierMove{static_cast<std::uint32_t>(rng() % objects.size()),
                                    static_cast<std::uint32_t>(rng() % nk), rng() % 2 == 0, rng() % 2 == 0});
    }
    const AutotmOffsets packed = ca::plan::autotm_dram_offsets(p, plan, 64);
    check_packing(packed, 64);
    REQUIRE(packed.extents.size() == nk);
  }
}

TEST_CASE("autotm offsets: a plan not of the program, or a bad alignment, is refused") {
  const Program p = fragmenting_program();
  MovePlan wrong = all_in_dram(p);
  wrong.in_fast.pop_back();
  test::check_contains(test::invalid_argument_of([&] { (void)ca::plan::autotm_dram_offsets(p, wrong, 64); }),
                       "autotm_dram_offsets: the plan places 1 kernels' arguments, the program has 2 kernels");
  test::check_contains(test::invalid_argument_of([&] { (void)ca::plan::autotm_dram_offsets(p, all_in_dram(p), 48); }),
                       "alignment 48 must be a power of two >= 8");
}

TEST_CASE("autotm offsets: ReDL's fitting loop judges a plan by its packing, AutoTM's by the online replay") {
  // All in DRAM fits the 192-byte heap when packed ahead, not online.
  const Program p = fragmenting_program();
  ca::plan::TierCosts costs;
  for (const auto& k : p.kernels()) {
    costs.fast_seconds.push_back(1.0);
    costs.slow_penalty.emplace_back(k.args.size(), 1.0);
  }
  const std::function<void(const std::string&)> silent = [](const std::string&) {};
  const ca::policy::PlanRequest request{p, costs, 192, 64, silent};
  int calls = 0;
  const MovePlan by_kernel = ca::policy::fit_to_heap_by_kernel(
      request,
      [&](const std::vector<std::uint64_t>&) {
        ++calls;
        return all_in_dram(p);
      },
      3);
  CHECK(calls == 1);
  CHECK(by_kernel.fits);
  CHECK(by_kernel.fast_extent == 192);
  CHECK(by_kernel.retries == 0);
  test::check_contains(by_kernel.status, "offline packing");
  const MovePlan uniform = ca::policy::fit_to_heap(
      request, [&](std::uint64_t) { return all_in_dram(p); }, 0);
  CHECK(!uniform.fits);
  CHECK(uniform.fast_extent == 256);
}

TEST_CASE("offset planners: best-fit above a floor places every buffer over it where it is alive") {
  // The floor: 10 bytes during [0, 4), none during [4, 8). b ([4, 8)) takes
  // the lowest line, at 0; a ([0, 8)) then fits nowhere below 10.
  const ca::plan::DsaProblem problem({{5, 0, 8}, {5, 4, 8}});
  const ca::plan::OffsetPlan above = ca::plan::best_fit_offsets(problem, {10, 10, 10, 10, 0, 0, 0, 0});
  CHECK(above.offsets == std::vector<std::uint64_t>{10, 0});
  CHECK(above.footprint == 15);
  // Without one, a (the longest) goes first, at 0.
  CHECK(ca::plan::best_fit_offsets(problem, {}).offsets == std::vector<std::uint64_t>{0, 5});
  CHECK(ca::plan::best_fit_offsets(problem) == ca::plan::best_fit_offsets(problem, {}));
}
