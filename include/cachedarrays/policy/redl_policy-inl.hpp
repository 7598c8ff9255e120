// Implementation of redl_policy.hpp (header-only mode includes it from
// there; the compiled library from src/policy/policy.cpp).
#pragma once

#include "cachedarrays/config.hpp"
#include "cachedarrays/policy/redl_policy.hpp"

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cachedarrays/plan/schedule/redl.hpp"

namespace cachedarrays::policy {

CACHEDARRAYS_INLINE std::optional<PlannerHook> redl_planner(std::string_view policy_name) {
  if (policy_name != "redl") return std::nullopt;
  PlannerHook hook;
  hook.name = "redl";
  hook.description = "ReDL's liveness-based migration planner, period size searched";
  // Period sizes a judge weighs (AutotmPolicyOptions::judge): the model's
  // choice and the next best by its model. Replayed in the steady state,
  // sizes the model ranks below its choice are faster on several models:
  // the model waits for every write-back and knows nothing of the heap's
  // fragments. Judging
  // by ReDL's model without its wait for write-backs, instead of a replay,
  // chose worse; judging, beside each size's plan, its plan made with that
  // wait dropped (its DSMA marks differ) changed no choice.
  constexpr std::uint32_t judged_periods = 16;
  // Then the sizes judged fastest, each with its copies in issued further
  // ahead (RedlOptions::issue_periods): how far ahead pays differs from
  // model to model (the winners spread across the range below), so the
  // range is wide. Issuing as early as the DRAM is free, or judging more
  // sizes and more of them ahead, changed no choice.
  static constexpr std::size_t sizes_judged_ahead = 3;
  static constexpr std::array<std::uint32_t, 9> issue_periods_judged{2, 3, 4, 6, 8, 12, 16, 20, 24};
  // Then the plans judged fastest, each with objects that live up to 2, 4,
  // 6, 8 or 12 layers held as short-lived (RedlOptions::short_lived_layers:
  // created in the fast region, never moved). The paper's bound is one
  // layer (§II-B), but its layer is a DNN layer and ours is one kernel: an
  // object one kernel writes and the next reads lives two of ours, so at
  // one layer only objects a single kernel uses are short-lived. Stretched,
  // the best plans got faster or stayed as they were, with oneDNN's AVX-512
  // layouts and its AVX2 ones (ONEDNN_MAX_CPU_ISA=AVX2) alike; the winning
  // length differs by model (the paper's one layer included). Other lists of
  // lengths, or more plans stretched, chose the same.
  static constexpr std::size_t plans_judged_short_lived = 3;
  static constexpr std::array<std::uint32_t, 5> short_lived_layers_judged{2, 4, 6, 8, 12};
  // All three steps run twice: with the room of a tight period given by
  // first use (the paper's order), then by slow-tier cost
  // (RedlOptions::room_by_slow_cost: the objects whose accesses would cost
  // the kernels most per byte in PMM first, so a write, which costs PMM
  // more of DRAM's time than a read does, gets DRAM before a read). Neither
  // order is best on every model, so both are judged: cost order alone won
  // on some and lost on others, and judging both orders' sizes in one first
  // step, and the best of both after it, lost too, since the orders' best
  // plans grow from different sizes. It costs twice the replays.
  // Last, the 3 plans judged fastest of all, each planned again to 95%, 90%
  // and 80% of the DRAM limit: a write-back's DRAM stays taken until its
  // copy lands (the executor, and the replay judging it, hold the region),
  // while ReDL's model frees it from the kernel after the copy is issued;
  // DRAM left free lets the creations and copies in that follow a
  // write-back go on without waiting for it; with the replay holding
  // landing sources, this helped most models and hurt none. Planning to
  // less under ReDL's own model instead (each write-back holding its DRAM
  // until its modeled copy ends), as the only rule, was worse on most.
  static constexpr std::size_t plans_judged_headroom = 3;
  static constexpr std::array<double, 3> headroom_judged{0.05, 0.10, 0.20};
  hook.plan = [](const PlanRequest& request) {
    const auto t0 = std::chrono::steady_clock::now();
    // AutoTM's fragmentation loop (fit_to_heap) lowers the limit of every
    // kernel by the heap's overflow; ReDL's plan fragments the heap where it
    // is fullest, so the limit is lowered there only (fit_to_heap_by_kernel).
    // (Lowered everywhere, a plan gives up DRAM at every kernel for the
    // overflow of a few, and models far slower.)
    plan::RedlOptions options;
    options.alignment = 0;  // fit_to_heap_by_kernel packs each plan: redl_plan need not replay it as well
    options.fast_limit = request.dram_limit;
    // One retry: a plan need not fit the heap exactly (the executor makes a
    // hole where a planned object finds none, DataManager::make_hole), and
    // each retry constrains the plan more. Fitted by the offline packing
    // (plan::autotm_dram_offsets), one retry models faster than none, and a
    // second can fit the packing yet lose more to its lowered limits than
    // the fragments cost.
    // Fitting by giving up what the heap replay cannot hold (each missed
    // stay left in the slow tier, plan::autotm_dram_extents's allocator)
    // instead of replanning was worse on every model tried, by far on some
    // (a missed parameter loses its stays for the whole iteration).
    constexpr std::uint32_t max_retries = 1;
    std::vector<plan::RedlTrial> trials;  // the period search's, by size tried
    const auto fitted_at = [&](std::uint32_t period_layers) {
      options.period_layers = period_layers;
      return fit_to_heap_by_kernel(
          request,
          [&](const std::vector<std::uint64_t>& kernel_limits) {
            options.kernel_limits = kernel_limits;
            const plan::RedlPlan redl = plan::redl_plan(request.program, request.costs, options);
            if (trials.empty()) trials = redl.search;
            // The retries plan at the period size the first search chose.
            options.period_layers = redl.period_layers;
            return plan::redl_autotm_plan(redl);
          },
          max_retries);
    };
    plan::AutotmPlan best = fitted_at(0);
    if (request.judge == nullptr || trials.size() < 2) return best;
    // The search's objective is ReDL's own model, which waits for every
    // write-back and knows nothing of the heap's fragments; a judge (a replay
    // on the executor) weighs the sizes the model liked best instead.
    const std::uint32_t chosen = options.period_layers;
    std::stable_sort(trials.begin(), trials.end(), [](const plan::RedlTrial& a, const plan::RedlTrial& b) {
      return a.modeled_seconds < b.modeled_seconds;
    });
    struct Judged {
      std::uint32_t period_layers, issue_periods;
      double seconds;
      std::uint32_t short_lived = 1;
      bool room_by_slow_cost = false;
      double headroom = 0;
    };
    std::vector<Judged> judged;
    double best_seconds = 0;
    double headroom = 0;  // of the plans judged next: the share of the DRAM limit left free
    const auto limit_share = [](double left_free) {
      return std::to_string(std::lround(100 * (1.0 - left_free))) + "% of the DRAM limit";
    };
    const auto judge = [&](plan::AutotmPlan candidate) {
      const double seconds = (*request.judge)(candidate);
      judged.push_back({options.period_layers, options.issue_periods, seconds, options.short_lived_layers,
                        options.room_by_slow_cost, headroom});
      if (judged.size() == 1 || seconds < best_seconds) {
        best = std::move(candidate);
        best_seconds = seconds;
      }
    };
    judge(std::move(best));
    // The `n` plans judged fastest so far of one order of room (ties in the
    // order judged), fastest first.
    const auto by_seconds = [](const Judged& a, const Judged& b) { return a.seconds < b.seconds; };
    const auto fastest_judged = [&](std::size_t n, bool room_by_slow_cost) {
      std::vector<Judged> fastest;
      for (const Judged& j : judged) {
        if (j.room_by_slow_cost == room_by_slow_cost) fastest.push_back(j);
      }
      std::stable_sort(fastest.begin(), fastest.end(), by_seconds);
      fastest.resize(std::min(fastest.size(), n));
      return fastest;
    };
    // The three steps, once with the room of a tight period given by first
    // use and once by slow-tier cost; each step keeps to its order's plans.
    for (const bool room_by_slow_cost : {false, true}) {
      options.room_by_slow_cost = room_by_slow_cost;
      options.issue_periods = 1;
      options.short_lived_layers = 1;
      // The sizes the model rates best.
      if (room_by_slow_cost) judge(fitted_at(chosen));
      std::size_t sizes = 1;
      for (const plan::RedlTrial& t : trials) {
        if (sizes >= judged_periods) break;
        if (t.period_layers == chosen) continue;
        judge(fitted_at(t.period_layers));
        ++sizes;
      }
      // The sizes judged fastest, with their copies in issued further ahead
      // than period t-1 where the DRAM they need is free that long.
      for (const Judged& f : fastest_judged(sizes_judged_ahead, room_by_slow_cost)) {
        for (const std::uint32_t ahead : issue_periods_judged) {
          options.issue_periods = ahead;
          judge(fitted_at(f.period_layers));
        }
      }
      // The plans judged fastest so far, each with short-lived stretched to
      // more layers.
      for (const Judged& f : fastest_judged(plans_judged_short_lived, room_by_slow_cost)) {
        options.issue_periods = f.issue_periods;
        for (const std::uint32_t layers : short_lived_layers_judged) {
          options.short_lived_layers = layers;
          judge(fitted_at(f.period_layers));
        }
      }
    }
    // The plans judged fastest of all, with DRAM left for landing
    // write-backs.
    std::vector<Judged> fastest = judged;
    std::stable_sort(fastest.begin(), fastest.end(), by_seconds);
    fastest.resize(std::min(fastest.size(), plans_judged_headroom));
    for (const Judged& f : fastest) {
      options.issue_periods = f.issue_periods;
      options.short_lived_layers = f.short_lived;
      options.room_by_slow_cost = f.room_by_slow_cost;
      for (const double h : headroom_judged) {
        headroom = h;
        options.fast_limit = static_cast<std::uint64_t>(static_cast<double>(request.dram_limit) * (1.0 - h));
        plan::AutotmPlan candidate = fitted_at(f.period_layers);
        candidate.status += ", planned to " + limit_share(h);
        judge(std::move(candidate));
      }
    }
    headroom = 0;
    options.fast_limit = request.dram_limit;
    options.short_lived_layers = 1;
    options.issue_periods = 1;
    options.room_by_slow_cost = false;
    const Judged& kept = *std::min_element(judged.begin(), judged.end(), by_seconds);
    const std::string line =
        "judged " + std::to_string(judged.size()) + " plans: periods of " + std::to_string(kept.period_layers) +
        " layers, copies in issued up to " + std::to_string(kept.issue_periods) + " period(s) ahead, short-lived up to " +
        std::to_string(kept.short_lived) + (kept.short_lived == 1 ? " layer, " : " layers, ") +
        (kept.room_by_slow_cost ? "room by slow-tier cost, " : "room by first use, ") +
        (kept.headroom > 0 ? limit_share(kept.headroom) + ", " : "") +
        std::to_string(kept.seconds) + " s per iteration (the model's " + std::to_string(chosen) +
        " layers, 1 period ahead: " + std::to_string(judged.front().seconds) + " s)";
    request.log(line);
    best.status += "; " + line;
    best.judged = static_cast<std::uint32_t>(judged.size());
    best.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return best;
  };
  return hook;
}

}  // namespace cachedarrays::policy
