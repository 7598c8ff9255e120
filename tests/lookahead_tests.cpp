// How far ahead the A modes start copies, chosen from kernel times
// (plan/schedule/lookahead.hpp): each kernel needs the window whose kernels last as
// long as copying its arguments, the choice covers the requested share of
// kernels, and the iteration wraps around.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "cachedarrays/error.hpp"
#include "cachedarrays/plan/program/program.hpp"
#include "cachedarrays/plan/program/roofline.hpp"
#include "cachedarrays/plan/schedule/lookahead.hpp"
#include "cachedarrays/policy/profiled_lookahead.hpp"

namespace ca = cachedarrays;
namespace plan = cachedarrays::plan;

namespace {

// `n` kernels, kernel j reading persistent object j of `bytes[j]` bytes.
plan::Program chain(const std::vector<std::uint64_t>& bytes) {
  std::vector<plan::ProgramObject> objects;
  std::vector<plan::ProgramKernel> kernels;
  std::vector<plan::ProgramStep> steps;
  for (std::uint32_t j = 0; j < bytes.size(); ++j) {
    objects.push_back({bytes[j], true});
    kernels.push_back({"conv" + std::to_string(j) + " flops=100000000", {{j, bytes[j], ca::Access::read}}});
    steps.push_back({plan::StepKind::kernel, j});
  }
  return plan::Program(objects, kernels, steps);
}

}  // namespace

TEST_CASE("lookahead: the window covers the copy time of each kernel's arguments") {
  // 1 GB/s: a 1e6-byte argument takes 1 ms to copy.
  const plan::Program p = chain({1'000'000, 1'000'000, 1'000'000, 1'000'000, 1'000'000});
  SUBCASE("kernels of 1 ms: one kernel ahead is enough") {
    const std::vector<double> t(5, 1e-3);
    CHECK(plan::choose_lookahead(p, t, 1.0).kernels == 1);
  }
  SUBCASE("kernels of 0.3 ms: four kernels ahead (1.2 ms), not three (0.9 ms)") {
    const std::vector<double> t(5, 0.3e-3);
    CHECK(plan::choose_lookahead(p, t, 1.0).kernels == 4);
  }
  SUBCASE("a faster copy needs a shorter window") {
    const std::vector<double> t(5, 0.3e-3);
    CHECK(plan::choose_lookahead(p, t, 4.0).kernels == 1);  // 0.25 ms copies
  }
  SUBCASE("the iteration wraps: kernel 0 is covered by the last kernels") {
    // Only kernel 4 is long: kernel 0 needs just it; the others need the
    // kernels back to it.
    const std::vector<double> t{0.1e-3, 0.1e-3, 0.1e-3, 0.1e-3, 5e-3};
    // needed: k0 1, k1 2, k2 3, k3 4, k4 4 (0.4 ms is not 1 ms; all four
    // others are still only 0.4 ms: uncovered)
    const plan::LookaheadChoice all = plan::choose_lookahead(p, t, 1.0, 1.0, 16);
    CHECK(all.uncovered == 1);
    CHECK(all.kernels == 16);  // full coverage asks for more than any window gives
    // 80% of the five kernels: the fourth smallest need, 4.
    CHECK(plan::choose_lookahead(p, t, 1.0, 0.8, 16).kernels == 4);
    CHECK(plan::choose_lookahead(p, t, 1.0, 0.2, 16).kernels == 1);
  }
}

TEST_CASE("lookahead: kernel times from a model, every argument in the fast tier") {
  const plan::Program p = chain({1000, 2000});
  const std::vector<double> t = plan::fast_kernel_seconds(p, plan::MemoryBound(), {10, 5});
  REQUIRE(t.size() == 2);
  CHECK(t[0] == doctest::Approx(1000 / 10.0 * 1e-9));
  CHECK(t[1] == doctest::Approx(2000 / 10.0 * 1e-9));
}

TEST_CASE("lookahead: bad input is refused with what is allowed") {
  const plan::Program p = chain({1000, 1000});
  const std::vector<double> two{1e-3, 1e-3};
  const std::vector<double> one{1e-3};
  const std::vector<double> negative{1e-3, -1};
  CHECK_THROWS_AS((void)plan::choose_lookahead(p, one, 1.0), ca::invalid_argument);
  CHECK_THROWS_AS((void)plan::choose_lookahead(p, negative, 1.0), ca::invalid_argument);
  CHECK_THROWS_AS((void)plan::choose_lookahead(p, two, 0.0), ca::invalid_argument);
  CHECK_THROWS_AS((void)plan::choose_lookahead(p, two, 1.0, 1.5), ca::invalid_argument);
  CHECK_THROWS_AS((void)plan::choose_lookahead(p, two, 1.0, 0.95, 0), ca::invalid_argument);
}

TEST_CASE("lookahead: the A modes' window from kernel profiles is the planner's choice on the profiled times") {
  // Five kernels of 1e6 bytes; profiled at 0.3 ms each all-fast (1 ms
  // all-slow); the slow tier reads at 1 GB/s: each copy takes 1 ms, so four
  // kernels ahead are needed.
  const plan::Program p = chain({1'000'000, 1'000'000, 1'000'000, 1'000'000, 1'000'000});
  plan::KernelProfiles profiles(plan::MachineKey{"Test CPU", 2, "test", "optane"});
  for (const plan::ProgramKernel& k : p.kernels()) profiles.set(k.name, {0.3e-3, 1e-3, 100'000'000, 1'000'000, 0});
  plan::LookaheadChoice choice;
  const ca::policy::Lookahead lookahead = ca::policy::profiled_lookahead(p, profiles, {10, 10}, {1, 1}, &choice);
  CHECK(lookahead.kernels == 4);
  CHECK(choice.kernels == 4);
  CHECK(choice.uncovered == 0);
  CHECK(lookahead.fast_fraction == ca::policy::Lookahead{}.fast_fraction);
  // Twice the copy bandwidth: two kernels (0.6 ms >= 0.5 ms).
  CHECK(ca::policy::profiled_lookahead(p, profiles, {10, 10}, {2, 2}).kernels == 2);
}
