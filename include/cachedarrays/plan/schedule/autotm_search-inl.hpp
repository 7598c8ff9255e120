// autotm_plan (autotm.hpp): the search around AutoTM's ILPs (AutoTM,
// Hildebrand et al., ASPLOS 2020): the greedy static seed, the
// fragmentation loop of §4.2 on each ILP, the synchronous formulation
// started from the static plan, and §7.1's asynchronous one from the
// synchronous plan, all within one time limit. Header-only mode includes it
// from autotm.hpp; the compiled library from src/plan/plan.cpp.
#pragma once

#include "cachedarrays/config.hpp"
#include "cachedarrays/plan/schedule/autotm.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cachedarrays/error.hpp"
#include "cachedarrays/plan/detail/cbc_support.hpp"
#include "cachedarrays/plan/schedule/autotm-inl.hpp"

namespace cachedarrays::plan {

namespace detail {

// Throws invalid_argument unless `costs` and `options` fit `program`.
CACHEDARRAYS_INLINE void check_autotm_request(const Program& program, const TierCosts& costs,
                                              const AutotmOptions& options) {
  const std::vector<ProgramKernel>& kernels = program.kernels();
  const std::size_t nk = kernels.size();
  if (costs.fast_seconds.size() != nk || costs.slow_penalty.size() != nk) {
    throw invalid_argument("autotm_plan: the costs cover " + std::to_string(costs.fast_seconds.size()) +
                           " kernels, the program has " + std::to_string(nk));
  }
  for (std::size_t k = 0; k < nk; ++k) {
    if (costs.slow_penalty[k].size() != kernels[k].args.size()) {
      throw invalid_argument("autotm_plan: kernel " + std::to_string(k) + " has " +
                             std::to_string(kernels[k].args.size()) + " arguments but " +
                             std::to_string(costs.slow_penalty[k].size()) + " PMM penalties");
    }
  }
  if (options.formulation != AutotmFormulation::static_placement &&
      !(costs.to_slow_gbps > 0 && costs.to_fast_gbps > 0)) {
    throw invalid_argument(std::string("autotm_plan: the ") + to_string(options.formulation) +
                           " formulation needs copy bandwidths > 0 GB/s");
  }
  if (!options.kernel_limits.empty() && options.kernel_limits.size() != nk) {
    throw invalid_argument("autotm_plan: kernel_limits has " + std::to_string(options.kernel_limits.size()) +
                           " entries for " + std::to_string(nk) + " kernels (or leave it empty)");
  }
  if (!(options.relative_gap >= 0 && options.relative_gap < 1)) {
    throw invalid_argument("autotm_plan: relative_gap must be in [0, 1)");
  }
  if (!(options.time_limit_seconds > 0 && std::isfinite(options.time_limit_seconds))) {
    throw invalid_argument("autotm_plan: time_limit_seconds must be a positive number of seconds");
  }
  if (options.formulation == AutotmFormulation::asynchronous && options.async_window == 0) {
    throw invalid_argument("autotm_plan: the asynchronous formulation needs async_window >= 1 kernel");
  }
  if (!(options.async_search_seconds > 0)) {
    throw invalid_argument("autotm_plan: async_search_seconds must be > 0 seconds");
  }
  if (!(options.fragmentation_factor > 0 && options.fragmentation_factor < 1)) {
    throw invalid_argument("autotm_plan: fragmentation_factor must be in (0, 1) (the paper's is 0.98)");
  }
  if (options.alignment < 8 || (options.alignment & (options.alignment - 1)) != 0) {
    throw invalid_argument("autotm_plan: alignment " + std::to_string(options.alignment) +
                           " must be a power of two >= 8 (the fast heap's DeviceSpec::alignment)");
  }
}

// The time limit is the whole plan's, the ILPs' construction and the heap
// replays included. Each phase has a deadline: the static plan that starts
// a synchronous or asynchronous one a quarter of the limit, the
// asynchronous search at most async_search_seconds at the end; within a
// phase a solve may take half of what is left before its deadline, the
// phase's last one all of it.
class AutotmSearch {
 public:
  AutotmSearch(const Program& program, const TierCosts& costs, const AutotmOptions& options)
      : program_(program),
        costs_(costs),
        options_(options),
        t0_(std::chrono::steady_clock::now()),
        nk_(program.kernels().size()),
        limits_(options.kernel_limits.empty() ? std::vector<std::uint64_t>(nk_, options.dram_limit)
                                              : options.kernel_limits) {}

  MovePlan run() {
    const bool asynchronous = options_.formulation == AutotmFormulation::asynchronous;
    const double limit = options_.time_limit_seconds;
    const double async_reserve = asynchronous ? std::min(options_.async_search_seconds, limit / 2) : 0.0;
    MovePlan plan = options_.formulation == AutotmFormulation::static_placement
                        ? static_plan(options_, limit, retries_)
                        : synchronous_plan(limit - async_reserve);
    if (asynchronous) plan = asynchronous_plan(std::move(plan), async_reserve);
    describe_fit(plan);
    plan.retries = retries_;
    plan.seconds = elapsed();
    return plan;
  }

 private:
  // A plan that fits the heap is worth this much more modeled time than one
  // that does not: over it, the mark of a solve that ran out of time, not of
  // a trade.
  static constexpr double fits_worth = 1.0;

  [[nodiscard]] double elapsed() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
  }

  void progress(const std::string& line) const {
    if (options_.progress) {
      options_.progress("autotm_plan " + mip_format_number(std::round(elapsed() * 10) / 10) + " s: " + line);
    }
  }

  AutotmIlp build(const AutotmOptions& o) const {
    AutotmIlp built = AutotmIlpBuilder(program_, costs_, o).build();
    progress(std::string("the ") + to_string(o.formulation) +
             " ILP built: " + std::to_string(built.model.objective.size()) + " columns, " +
             std::to_string(built.model.row_upper.size()) + " rows");
    return built;
  }

  // §4.2: the plan's DRAM allocations replayed on the heap's allocator.
  void replay(MovePlan& p, std::vector<std::uint64_t>& extents) const {
    extents = autotm_dram_extents(program_, p, options_.alignment);
    p.fast_extent = extents.empty() ? 0 : *std::max_element(extents.begin(), extents.end());
    p.fits = p.fast_extent <= options_.dram_limit;
  }

  // A plan that fits is taken over one the executor must defragment (§4.2:
  // a plan modeled slightly faster that reaches further past the heap
  // leaves objects without a hole and runs slower than the one that reaches
  // less far) unless it is modeled at over fits_worth more.
  static bool better(const MovePlan& a, const MovePlan& b) {
    if (a.fits == b.fits) return a.modeled_seconds < b.modeled_seconds;
    return a.fits ? a.modeled_seconds <= b.modeled_seconds * (1 + fits_worth)
                  : a.modeled_seconds * (1 + fits_worth) < b.modeled_seconds;
  }

  // The best MIP start among `plans` that keeps `limits` (repaired if it
  // can be); none: the solve starts from everything in PMM.
  std::optional<std::vector<double>> start_for(const AutotmIlp& ilp, const std::vector<std::uint64_t>& limits,
                                               const std::vector<const MovePlan*>& plans) const {
    std::optional<std::vector<double>> start;
    double best_seconds = std::numeric_limits<double>::infinity();
    for (const MovePlan* p : plans) {
      if (p == nullptr) continue;
      std::vector<double> values = autotm_start_from(program_, ilp, *p);
      if (!autotm_keeps_limits(ilp, values, limits) && !autotm_repair(ilp, values, limits)) continue;
      double objective = ilp.constant;
      for (std::size_t c = 0; c < values.size(); ++c) objective += ilp.model.objective[c] * values[c];
      if (objective >= best_seconds) continue;
      start = std::move(values);
      best_seconds = objective;
    }
    return start;
  }

  MovePlan solve(const AutotmIlp& ilp, const AutotmOptions& solve_options, const std::vector<std::uint64_t>& limits,
                 double deadline, bool last, const std::vector<const MovePlan*>& starts) const {
    const double left = std::max(0.01, deadline - elapsed());
    const std::optional<std::vector<double>> start = start_for(ilp, limits, starts);
    MovePlan solved =
        autotm_solve(program_, ilp, limits, solve_options, last ? left : left / 2, start ? &*start : nullptr);
    progress(std::string("a ") + to_string(solve_options.formulation) + " solve" +
             (start ? "" : " (from everything in PMM)") + ": modeled " + mip_format_number(solved.modeled_seconds) +
             " s, " + solved.status);
    return solved;
  }

  void replayed(MovePlan& p, std::vector<std::uint64_t>& extents) const {
    replay(p, extents);
    progress("the heap replay reaches " + std::to_string(p.fast_extent) + " bytes of " +
             std::to_string(options_.dram_limit) + (p.fits ? " (fits)" : " (fragments)"));
  }

  // The best of the solve and the seeds: a seed only when the solve did
  // worse, not when it returned the seed again (summed in another order: a
  // last digit apart), so that the plan says what the solve proved.
  static MovePlan best_of(const MovePlan& solved, const std::vector<const MovePlan*>& seeds) {
    MovePlan best = solved;
    for (const MovePlan* seed : seeds) {
      if (seed == nullptr || !better(*seed, best)) continue;
      if (seed->fits == best.fits && seed->modeled_seconds >= best.modeled_seconds * (1 - 1e-9)) continue;
      best = *seed;
    }
    return best;
  }

  // The kernels whose allocations reach past L_DRAM (K_frag) get L_DRAM,k
  // *= fragmentation_factor (or lowered by their overflow,
  // lower_by_overflow); false when none does.
  bool lower_fragmented(const std::vector<std::uint64_t>& extents, std::vector<std::uint64_t>& limits) const {
    bool lowered = false;
    for (std::size_t k = 0; k < nk_; ++k) {
      if (extents[k] <= options_.dram_limit) continue;
      double factor = options_.fragmentation_factor;
      if (options_.lower_by_overflow) {
        factor = std::min(factor, static_cast<double>(options_.dram_limit) / static_cast<double>(extents[k]));
      }
      limits[k] = static_cast<std::uint64_t>(std::floor(static_cast<double>(limits[k]) * factor));
      lowered = true;
    }
    return lowered;
  }

  // The fragmentation loop (§4.2) on one ILP: solve, replay the plan on the
  // heap's allocator, lower the limits of the kernels that fragment, solve
  // again. Each solve starts from the best plan at hand that keeps the new
  // limits (the last one, the loop's best, the `seeds`): a MIP start that
  // breaks a limit Cbc drops, and then, short of time, it may find nothing
  // better than everything in PMM. Returns the best plan it saw, the seeds
  // included.
  MovePlan fragmentation_loop(const AutotmIlp& ilp, const AutotmOptions& solve_options,
                              std::vector<std::uint64_t> limits, double deadline,
                              const std::vector<const MovePlan*>& seeds, std::uint32_t& loop_retries) const {
    loop_retries = 0;
    MovePlan plan = solve(ilp, solve_options, limits, deadline, options_.max_retries == 0, seeds);
    std::vector<std::uint64_t> extents;
    if (options_.max_retries > 0) replayed(plan, extents);
    MovePlan best = best_of(plan, seeds);
    if (options_.max_retries == 0) return best;
    while (loop_retries < options_.max_retries && lower_fragmented(extents, limits)) {
      ++loop_retries;
      std::vector<const MovePlan*> starts{&plan, &best};
      starts.insert(starts.end(), seeds.begin(), seeds.end());
      plan = solve(ilp, solve_options, limits, deadline, loop_retries == options_.max_retries, starts);
      replayed(plan, extents);
      if (better(plan, best)) best = plan;
    }
    return best;
  }

  // The static loop's seed: the greedy knapsack (autotm_greedy_start),
  // replayed like any plan, so that it competes for the result too.
  MovePlan greedy_plan(const AutotmIlp& static_ilp) const {
    const std::vector<double> values = autotm_greedy_start(program_, static_ilp, limits_);
    MovePlan greedy;
    autotm_read_plan(program_, static_ilp, values, greedy);
    double total = static_ilp.constant;
    for (std::size_t c = 0; c < values.size(); ++c) total += static_ilp.model.objective[c] * values[c];
    greedy.modeled_seconds = total / autotm_time_unit;
    greedy.kernel_limits = limits_;
    greedy.status = "the greedy static plan (no solve improved on it)";
    std::vector<std::uint64_t> extents;
    if (options_.max_retries > 0) replay(greedy, extents);
    progress("the greedy static plan: modeled " + mip_format_number(greedy.modeled_seconds) + " s" +
             (greedy.fits ? "" : " (fragments)"));
    return greedy;
  }

  MovePlan static_plan(const AutotmOptions& fixed, double deadline, std::uint32_t& retries) const {
    const AutotmIlp ilp = build(fixed);
    const MovePlan greedy = greedy_plan(ilp);
    return fragmentation_loop(ilp, fixed, limits_, deadline, {&greedy}, retries);
  }

  // The synchronous ILP starts from the static plan, with its own
  // fragmentation loop, which the synchronous ILP contains and Cbc solves in
  // seconds: from "everything in PMM" Cbc may find nothing better within the
  // time on a program of thousands of kernels, a plan far slower than the
  // static one. The static plan stays a candidate to the end: the
  // synchronous loop's retries, short of time, can return a plan modeled
  // slower than the static one.
  MovePlan synchronous_plan(double deadline) {
    AutotmOptions fixed = options_;
    fixed.formulation = AutotmFormulation::static_placement;
    std::uint32_t static_retries = 0;
    const MovePlan start = static_plan(fixed, options_.time_limit_seconds / 4, static_retries);
    AutotmOptions synchronous = options_;
    synchronous.formulation = AutotmFormulation::synchronous;
    const AutotmIlp ilp = build(synchronous);
    MovePlan plan = fragmentation_loop(ilp, synchronous, limits_, deadline, {&start}, retries_);
    if (plan.modeled_seconds == start.modeled_seconds && plan.moves == start.moves) {
      retries_ = static_retries;
      plan.status += " (the static plan: the synchronous search found nothing better)";
    }
    return plan;
  }

  // §7.1 from the synchronous plan, which it contains: stopped early, the
  // search still returns a plan no worse. One that fragments where the
  // synchronous plan did not is not taken.
  MovePlan asynchronous_plan(MovePlan plan, double reserve) const {
    const AutotmIlp async_ilp = build(options_);
    const std::vector<double> start = autotm_start_from(program_, async_ilp, plan);
    MovePlan async = autotm_solve(program_, async_ilp, plan.kernel_limits, options_,
                                  std::max(0.01, std::min(options_.time_limit_seconds - elapsed(), reserve)), &start);
    std::vector<std::uint64_t> extents;
    if (options_.max_retries > 0) replay(async, extents);
    if (async.modeled_seconds <= plan.modeled_seconds + 1e-12 && (async.fits || !plan.fits)) return async;
    plan.status += async.modeled_seconds > plan.modeled_seconds
                       ? " (the synchronous plan: the asynchronous search found nothing as good)"
                       : " (the synchronous plan: the asynchronous one fragments the heap)";
    return plan;
  }

  void describe_fit(MovePlan& plan) const {
    if (options_.max_retries == 0) return;
    plan.status += "; the heap replay (section 4.2) ";
    if (plan.fits) {
      plan.status += "fits in " + std::to_string(plan.fast_extent) + " bytes after " + std::to_string(retries_) +
                     (retries_ == 1 ? " retry" : " retries");
    } else {
      plan.status += "still does not fit after " + std::to_string(retries_) + " retries (max_retries): it reaches " +
                     std::to_string(plan.fast_extent) + " bytes of the limit of " +
                     std::to_string(options_.dram_limit) + "; the executor must defragment";
    }
  }

  const Program& program_;
  const TierCosts& costs_;
  const AutotmOptions& options_;
  std::chrono::steady_clock::time_point t0_;
  std::size_t nk_;
  std::vector<std::uint64_t> limits_;  // L_DRAM,k as asked
  std::uint32_t retries_ = 0;          // of the loop whose plan is returned
};

}  // namespace detail

CACHEDARRAYS_INLINE MovePlan autotm_plan(const Program& program, const TierCosts& costs, const AutotmOptions& options) {
  detail::check_autotm_request(program, costs, options);
  return detail::AutotmSearch(program, costs, options).run();
}

}  // namespace cachedarrays::plan
