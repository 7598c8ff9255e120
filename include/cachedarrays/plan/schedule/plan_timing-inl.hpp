// Implementation of plan_timing.hpp (header-only mode includes it from there;
// the compiled library from src/plan/plan.cpp).
#pragma once

#include "cachedarrays/config.hpp"
#include "cachedarrays/plan/schedule/plan_timing.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "cachedarrays/error.hpp"
#include "cachedarrays/plan/schedule/copy_timeline.hpp"

namespace cachedarrays::plan {

namespace detail {

CACHEDARRAYS_INLINE void check_move_plan(const Program& program, const MovePlan& plan) {
  const std::size_t nk = program.kernels().size();
  if (plan.in_fast.size() != nk) {
    throw invalid_argument("time_move_plan: the plan places the arguments of " + std::to_string(plan.in_fast.size()) +
                           " kernels (in_fast), the program has " + std::to_string(nk) + "; give one entry per kernel");
  }
  for (std::size_t k = 0; k < nk; ++k) {
    if (plan.in_fast[k].size() != program.kernels()[k].args.size()) {
      throw invalid_argument("time_move_plan: in_fast[" + std::to_string(k) + "] places " +
                             std::to_string(plan.in_fast[k].size()) + " arguments, kernel " + std::to_string(k) +
                             " has " + std::to_string(program.kernels()[k].args.size()) +
                             "; give one entry per argument");
    }
  }
  for (const TierMove& m : plan.moves) {
    if (m.object >= program.objects().size() || m.kernel >= nk) {
      throw invalid_argument("time_move_plan: a move of object " + std::to_string(m.object) + " at kernel " +
                             std::to_string(m.kernel) + "; the program has " +
                             std::to_string(program.objects().size()) + " objects and " + std::to_string(nk) +
                             " kernels");
    }
  }
}

}  // namespace detail

CACHEDARRAYS_INLINE MovePlanTime time_move_plan(const Program& program, const TierCosts& costs, const MovePlan& plan,
                                                const MovePlanRules& rules) {
  costs.check(program, "time_move_plan");
  detail::check_move_plan(program, plan);
  constexpr DeviceId fast = CopyChannels::fast, slow = CopyChannels::slow;
  const std::size_t nk = program.kernels().size();
  const std::size_t n = program.objects().size();
  // By kernel, in plan order: synchronous moves in before it, asynchronous
  // ones beside it, synchronous moves out after it.
  std::vector<std::vector<TierMove>> before(nk), beside(nk), after(nk);
  for (const TierMove& m : plan.moves) {
    (m.asynchronous ? beside : m.to_fast ? before : after)[m.kernel].push_back(m);
  }
  CopyTimeline timeline(costs.channels(), n);
  // By object: its slow copy is current (nothing written in the fast tier
  // since it was copied in, or out), so a move out copies nothing.
  std::vector<char> clean(n, 1), was_clean;
  std::vector<std::uint64_t> waited;
  MovePlanTime out;
  out.kernel_start.assign(nk, 0.0);
  double was_seconds = -1, was_idle = -1;
  const auto close = [](double a, double b) { return std::abs(a - b) <= 1e-12 * (1 + std::abs(a) + std::abs(b)); };
  for (unsigned iteration = 1; iteration <= 8; ++iteration) {
    const double exposed = timeline.exposed_copy_seconds();
    double hold = 0;  // write_backs_hold_next: when the last asynchronous move out lands
    const auto issue = [&](const TierMove& m) {
      const std::uint64_t bytes = m.to_fast || !clean[m.object] ? program.objects()[m.object].bytes : 0;
      clean[m.object] = 1;
      if (bytes == 0) return;
      if (!m.to_fast && rules.write_backs_in_background) {
        timeline.copy_background(fast, slow, bytes, m.object);
        if (rules.write_backs_hold_next) hold = std::max(hold, timeline.landed(m.object));
        return;
      }
      const CopySpan span = m.to_fast ? timeline.copy_async(slow, fast, bytes, m.object)
                                      : timeline.copy_async(fast, slow, bytes, m.object);
      if (!m.to_fast && rules.write_backs_hold_next) hold = std::max(hold, span.end);
    };
    for (const ProgramStep& step : program.steps()) {
      if (step.kind == StepKind::create) clean[step.index] = 0;  // its only copy is where it is made
      if (step.kind != StepKind::kernel) continue;
      const std::size_t k = step.index;
      const ProgramKernel& kernel = program.kernels()[k];
      for (const TierMove& m : before[k]) {
        (void)timeline.copy_sync(slow, fast, program.objects()[m.object].bytes, m.object);
        clean[m.object] = 1;
      }
      if (!rules.issue_after_wait) {
        for (const TierMove& m : beside[k]) issue(m);
      }
      timeline.wait_until(hold);
      double seconds = costs.fast_seconds[k];
      waited.clear();
      for (std::size_t a = 0; a < kernel.args.size(); ++a) {
        if (plan.in_fast[k][a] || rules.slow_uses_wait) waited.push_back(kernel.args[a].object);
        if (!plan.in_fast[k][a]) seconds += costs.slow_penalty[k][a];
      }
      out.kernel_start[k] = timeline.run_kernel(waited, 0);
      // Written in the fast tier: its slow copy is stale (a move beside
      // this kernel copies what the kernel writes).
      for (std::size_t a = 0; a < kernel.args.size(); ++a) {
        const std::uint32_t o = kernel.args[a].object;
        if (kernel.args[a].access != Access::read) clean[o] = plan.in_fast[k][a] ? 0 : 1;
      }
      if (rules.issue_after_wait) {
        for (const TierMove& m : beside[k]) issue(m);
      }
      timeline.run(seconds);
      for (const TierMove& m : after[k]) {
        if (!clean[m.object]) (void)timeline.copy_sync(fast, slow, program.objects()[m.object].bytes, m.object);
        clean[m.object] = 1;
      }
    }
    timeline.wait_until(hold);
    out.seconds = timeline.now();
    out.wait_seconds = timeline.exposed_copy_seconds() - exposed;
    out.iterations = iteration;
    const double idle = std::max(0.0, timeline.seconds() - out.seconds);  // background copies queued included
    const bool same = close(out.seconds, was_seconds) && close(idle, was_idle) && clean == was_clean;
    timeline.carry_over(out.seconds);
    if (same) break;
    was_seconds = out.seconds;
    was_idle = idle;
    was_clean = clean;
  }
  return out;
}

}  // namespace cachedarrays::plan
