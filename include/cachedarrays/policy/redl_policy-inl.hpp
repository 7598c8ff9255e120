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

namespace detail {

// ReDL's plan for one request, judged by replay when the request has a
// judge (docs/policies/redl.md "The judged search" says how each step was
// chosen). ReDL's own search (plan/schedule/redl.hpp) picks the period size
// by its model; the judge then weighs, in the executor's steady state,
//   1. the period sizes the model rates best;
//   2. the sizes judged fastest, with their copies in issued further ahead
//      (RedlOptions::issue_periods);
//   3. the plans judged fastest, with objects of a few layers held as
//      short-lived (RedlOptions::short_lived_layers: our layer is one
//      kernel, the paper's a DNN layer);
// all three with the room of a tight period given by first use (the
// paper's order) and again by slow-tier cost (RedlOptions::room_by_slow_cost);
//   4. the plans judged fastest of all, planned to less than the DRAM
//      limit: a write-back's DRAM stays taken until its copy lands, which
//      ReDL's model does not charge.
class RedlJudgedSearch {
 public:
  explicit RedlJudgedSearch(const PlanRequest& request) : request_(request), t0_(std::chrono::steady_clock::now()) {
    options_.alignment = 0;  // fit_to_heap_by_kernel packs each plan: redl_plan need not replay it as well
    options_.fast_limit = request.dram_limit;
  }

  plan::MovePlan run() {
    best_ = fitted_at(0);
    if (request_.judge == nullptr || trials_.size() < 2) return best_;
    chosen_ = options_.period_layers;
    std::stable_sort(trials_.begin(), trials_.end(), [](const plan::RedlTrial& a, const plan::RedlTrial& b) {
      return a.modeled_seconds < b.modeled_seconds;
    });
    judge(std::move(best_));
    for (const bool room_by_slow_cost : {false, true}) judge_order(room_by_slow_cost);
    judge_headroom();
    summarize();
    return std::move(best_);
  }

 private:
  // The steps' widths: how many sizes, plans and variants each judges.
  static constexpr std::uint32_t judged_periods = 16;
  static constexpr std::size_t sizes_judged_ahead = 3;
  static constexpr std::array<std::uint32_t, 9> issue_periods_judged{2, 3, 4, 6, 8, 12, 16, 20, 24};
  static constexpr std::size_t plans_judged_short_lived = 3;
  static constexpr std::array<std::uint32_t, 5> short_lived_layers_judged{2, 4, 6, 8, 12};
  static constexpr std::size_t plans_judged_headroom = 3;
  static constexpr std::array<double, 3> headroom_judged{0.05, 0.10, 0.20};
  // One retry of the fit to the heap: a plan need not fit it exactly (the
  // executor makes a hole where a planned object finds none,
  // DataManager::make_hole), and each retry constrains the plan more.
  static constexpr std::uint32_t max_retries = 1;

  struct Judged {
    std::uint32_t period_layers, issue_periods;
    double seconds;
    std::uint32_t short_lived = 1;
    bool room_by_slow_cost = false;
    double headroom = 0;
  };

  static bool by_seconds(const Judged& a, const Judged& b) { return a.seconds < b.seconds; }

  static std::string limit_share(double left_free) {
    return std::to_string(std::lround(100 * (1.0 - left_free))) + "% of the DRAM limit";
  }

  // ReDL's plan at a period size (0: searched), fitted to the heap. ReDL's
  // plan fragments the heap where it is fullest, so the limit is lowered
  // there only (fit_to_heap_by_kernel), not everywhere as AutoTM's loop
  // does.
  plan::MovePlan fitted_at(std::uint32_t period_layers) {
    options_.period_layers = period_layers;
    return fit_to_heap_by_kernel(
        request_,
        [&](const std::vector<std::uint64_t>& kernel_limits) {
          options_.kernel_limits = kernel_limits;
          const plan::RedlPlan redl = plan::redl_plan(request_.program, request_.costs, options_);
          if (trials_.empty()) trials_ = redl.search;
          // The retries plan at the period size the first search chose.
          options_.period_layers = redl.period_layers;
          return plan::redl_autotm_plan(redl);
        },
        max_retries);
  }

  void judge(plan::MovePlan candidate) {
    const double seconds = (*request_.judge)(candidate);
    judged_.push_back({options_.period_layers, options_.issue_periods, seconds, options_.short_lived_layers,
                       options_.room_by_slow_cost, headroom_});
    if (judged_.size() == 1 || seconds < best_seconds_) {
      best_ = std::move(candidate);
      best_seconds_ = seconds;
    }
  }

  // The `n` plans judged fastest so far of one order of room (ties in the
  // order judged), fastest first.
  std::vector<Judged> fastest_judged(std::size_t n, bool room_by_slow_cost) const {
    std::vector<Judged> fastest;
    for (const Judged& j : judged_) {
      if (j.room_by_slow_cost == room_by_slow_cost) fastest.push_back(j);
    }
    std::stable_sort(fastest.begin(), fastest.end(), by_seconds);
    fastest.resize(std::min(fastest.size(), n));
    return fastest;
  }

  // Steps 1 to 3 with one order of room; each step keeps to its order's plans.
  void judge_order(bool room_by_slow_cost) {
    options_.room_by_slow_cost = room_by_slow_cost;
    options_.issue_periods = 1;
    options_.short_lived_layers = 1;
    if (room_by_slow_cost) judge(fitted_at(chosen_));
    std::size_t sizes = 1;
    for (const plan::RedlTrial& t : trials_) {
      if (sizes >= judged_periods) break;
      if (t.period_layers == chosen_) continue;
      judge(fitted_at(t.period_layers));
      ++sizes;
    }
    for (const Judged& f : fastest_judged(sizes_judged_ahead, room_by_slow_cost)) {
      for (const std::uint32_t ahead : issue_periods_judged) {
        options_.issue_periods = ahead;
        judge(fitted_at(f.period_layers));
      }
    }
    for (const Judged& f : fastest_judged(plans_judged_short_lived, room_by_slow_cost)) {
      options_.issue_periods = f.issue_periods;
      for (const std::uint32_t layers : short_lived_layers_judged) {
        options_.short_lived_layers = layers;
        judge(fitted_at(f.period_layers));
      }
    }
  }

  // Step 4: the plans judged fastest of all, with DRAM left for landing
  // write-backs.
  void judge_headroom() {
    std::vector<Judged> fastest = judged_;
    std::stable_sort(fastest.begin(), fastest.end(), by_seconds);
    fastest.resize(std::min(fastest.size(), plans_judged_headroom));
    for (const Judged& f : fastest) {
      options_.issue_periods = f.issue_periods;
      options_.short_lived_layers = f.short_lived;
      options_.room_by_slow_cost = f.room_by_slow_cost;
      for (const double h : headroom_judged) {
        headroom_ = h;
        options_.fast_limit = static_cast<std::uint64_t>(static_cast<double>(request_.dram_limit) * (1.0 - h));
        plan::MovePlan candidate = fitted_at(f.period_layers);
        candidate.status += ", planned to " + limit_share(h);
        judge(std::move(candidate));
      }
    }
    headroom_ = 0;
    options_.fast_limit = request_.dram_limit;
    options_.short_lived_layers = 1;
    options_.issue_periods = 1;
    options_.room_by_slow_cost = false;
  }

  void summarize() {
    const Judged& kept = *std::min_element(judged_.begin(), judged_.end(), by_seconds);
    const std::string line = "judged " + std::to_string(judged_.size()) + " plans: periods of " +
                             std::to_string(kept.period_layers) + " layers, copies in issued up to " +
                             std::to_string(kept.issue_periods) + " period(s) ahead, short-lived up to " +
                             std::to_string(kept.short_lived) + (kept.short_lived == 1 ? " layer, " : " layers, ") +
                             (kept.room_by_slow_cost ? "room by slow-tier cost, " : "room by first use, ") +
                             (kept.headroom > 0 ? limit_share(kept.headroom) + ", " : "") +
                             std::to_string(kept.seconds) + " s per iteration (the model's " + std::to_string(chosen_) +
                             " layers, 1 period ahead: " + std::to_string(judged_.front().seconds) + " s)";
    request_.log(line);
    best_.status += "; " + line;
    best_.judged = static_cast<std::uint32_t>(judged_.size());
    best_.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
  }

  const PlanRequest& request_;
  std::chrono::steady_clock::time_point t0_;
  plan::RedlOptions options_;
  std::vector<plan::RedlTrial> trials_;  // the period search's, by size tried
  std::uint32_t chosen_ = 0;             // the period size ReDL's model chose
  std::vector<Judged> judged_;
  plan::MovePlan best_;
  double best_seconds_ = 0;
  double headroom_ = 0;  // of the plans judged next: the share of the DRAM limit left free
};

}  // namespace detail

CACHEDARRAYS_INLINE std::optional<PlannerHook> redl_planner(std::string_view policy_name) {
  if (policy_name != "redl") return std::nullopt;
  PlannerHook hook;
  hook.name = "redl";
  hook.description = "ReDL's liveness-based migration planner, period size searched";
  hook.plan = [](const PlanRequest& request) { return detail::RedlJudgedSearch(request).run(); };
  return hook;
}

}  // namespace cachedarrays::policy
