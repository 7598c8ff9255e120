// Implementation of dsa_mip.hpp (header-only mode includes it from there;
// the compiled library from src/plan/plan.cpp).
#pragma once

#include "cachedarrays/config.hpp"
#include "cachedarrays/plan/offsets/dsa_mip.hpp"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <numeric>
#include <set>
#include <tuple>
#include <utility>
#include <vector>

#include "cachedarrays/error.hpp"
#include "cachedarrays/plan/detail/cbc_support.hpp"
#include "cachedarrays/plan/offsets/best_fit_offsets.hpp"
#include "cachedarrays/plan/offsets/smartpool_offsets.hpp"

namespace cachedarrays::plan {

namespace detail {

// The paper's E: pairs (i, j), i < j, whose lifetimes [start, end) overlap.
// A sweep in start order keeps the buffers still alive, so each pair is
// found once.
CACHEDARRAYS_INLINE std::vector<std::pair<std::uint32_t, std::uint32_t>> mip_colliding_pairs(
    const DsaProblem& problem) {
  const std::vector<DsaBuffer>& buffers = problem.buffers();
  std::vector<std::uint32_t> order(buffers.size());
  std::iota(order.begin(), order.end(), std::uint32_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](std::uint32_t a, std::uint32_t b) { return buffers[a].start < buffers[b].start; });
  std::vector<std::pair<std::uint32_t, std::uint32_t>> pairs;
  std::vector<std::uint32_t> alive;
  for (const std::uint32_t i : order) {
    std::erase_if(alive, [&](std::uint32_t a) { return buffers[a].end <= buffers[i].start; });
    for (const std::uint32_t a : alive) pairs.emplace_back(std::min(a, i), std::max(a, i));
    alive.push_back(i);
  }
  return pairs;
}

// Max-live counting the alignment: at a moment t, the buffers alive lie
// one above another at offsets that are multiples of the alignment, so
// every one but the top takes at least its aligned size and the top its own
// size: footprint >= sum of aligned sizes - max(aligned size - size) over
// the buffers alive at t. With alignment 1 it is max-live. The MIP's linear
// relaxation cannot see it (its offsets may sit anywhere), and without it
// Cbc branches through every order of, say, nine 8-byte buffers aligned to
// 64 before proving what this gives at once.
CACHEDARRAYS_INLINE std::uint64_t mip_aligned_max_live(const DsaProblem& problem) {
  const std::vector<DsaBuffer>& buffers = problem.buffers();
  std::vector<std::size_t> by_start(buffers.size());
  std::iota(by_start.begin(), by_start.end(), std::size_t{0});
  std::vector<std::size_t> by_end = by_start;
  std::sort(by_start.begin(), by_start.end(),
            [&](std::size_t a, std::size_t b) { return buffers[a].start < buffers[b].start; });
  std::sort(by_end.begin(), by_end.end(),
            [&](std::size_t a, std::size_t b) { return buffers[a].end < buffers[b].end; });
  std::multiset<std::uint64_t> slack;  // aligned size - size of the buffers alive
  std::uint64_t aligned_alive = 0;
  std::uint64_t bound = 0;
  std::size_t e = 0;
  for (std::size_t s = 0; s < by_start.size();) {
    // The alive set only grows at a start: the moments after each start
    // (those that share it together) are the ones to look at.
    const std::uint32_t t = buffers[by_start[s]].start;
    for (; e < by_end.size() && buffers[by_end[e]].end <= t; ++e) {
      const std::size_t i = by_end[e];
      aligned_alive -= problem.aligned_size(i);
      slack.erase(slack.find(problem.aligned_size(i) - buffers[i].size));
    }
    for (; s < by_start.size() && buffers[by_start[s]].start == t; ++s) {
      const std::size_t i = by_start[s];
      aligned_alive += problem.aligned_size(i);
      slack.insert(problem.aligned_size(i) - buffers[i].size);
    }
    bound = std::max(bound, aligned_alive - *slack.rbegin());
  }
  return bound;
}

// Buffers of the same size and lifetime are interchangeable: any solution
// stays one when two of them swap offsets. The MIP fixes the order of each
// such pair (the lower index lower, z_ij = 0), which removes those mirror
// solutions from the search; this gives a plan the same order without
// changing its footprint, so that it stays a warm start of that MIP.
CACHEDARRAYS_INLINE OffsetPlan mip_order_identical(const DsaProblem& problem, OffsetPlan plan) {
  std::map<std::tuple<std::uint64_t, std::uint32_t, std::uint32_t>, std::vector<std::size_t>> groups;
  const std::vector<DsaBuffer>& buffers = problem.buffers();
  for (std::size_t i = 0; i < buffers.size(); ++i) {
    groups[{buffers[i].size, buffers[i].start, buffers[i].end}].push_back(i);
  }
  for (const auto& [key, members] : groups) {
    if (members.size() < 2) continue;
    std::vector<std::uint64_t> offsets;
    for (const std::size_t i : members) offsets.push_back(plan.offsets[i]);
    std::sort(offsets.begin(), offsets.end());
    for (std::size_t k = 0; k < members.size(); ++k) plan.offsets[members[k]] = offsets[k];  // members ascend
  }
  return plan;
}

// The plan an order of the colliding pairs gives: each buffer as low as the
// buffers ordered below it allow (the longest path in the order's DAG,
// weighted by aligned sizes). Offsets are sums of aligned sizes, so
// multiples of the alignment, and never above the offsets of any solution
// with the same order: reading the order from Cbc's binaries, not its
// continuous offsets, gives an exact plan whatever Cbc's tolerances.
CACHEDARRAYS_INLINE OffsetPlan mip_plan_from_order(const DsaProblem& problem,
                                                   const std::vector<std::pair<std::uint32_t, std::uint32_t>>& pairs,
                                                   const std::vector<bool>& first_below) {
  const std::size_t n = problem.size();
  std::vector<std::vector<std::uint32_t>> above(n);  // above[i]: the buffers ordered right above i
  std::vector<std::size_t> below_count(n, 0);
  for (std::size_t k = 0; k < pairs.size(); ++k) {
    const auto [lo, hi] = first_below[k] ? pairs[k] : std::pair{pairs[k].second, pairs[k].first};
    above[lo].push_back(hi);
    ++below_count[hi];
  }
  OffsetPlan plan;
  plan.offsets.assign(n, 0);
  std::vector<std::uint32_t> ready;
  for (std::uint32_t i = 0; i < n; ++i) {
    if (below_count[i] == 0) ready.push_back(i);
  }
  std::size_t placed = 0;
  while (!ready.empty()) {
    const std::uint32_t i = ready.back();
    ready.pop_back();
    ++placed;
    for (const std::uint32_t j : above[i]) {
      plan.offsets[j] = std::max(plan.offsets[j], plan.offsets[i] + problem.aligned_size(i));
      if (--below_count[j] == 0) ready.push_back(j);
    }
  }
  if (placed != n) {
    throw error("mip_offsets: Cbc's solution orders " + std::to_string(n - placed) +
                " buffers in a cycle (each below another that is below it); it is no solution of the MIP");
  }
  plan.footprint = footprint_of(problem, plan.offsets);
  return plan;
}

// The incumbent: the user's warm start (checked), else the best heuristic.
CACHEDARRAYS_INLINE OffsetPlan mip_incumbent(const DsaProblem& problem, const MipOptions& options) {
  if (options.warm_start) {
    try {
      check_plan(problem, *options.warm_start);
    } catch (const invalid_argument& e) {
      throw invalid_argument(std::string("mip_offsets: the warm start is no solution of the problem: ") + e.what());
    }
    return *options.warm_start;
  }
  OffsetPlan best = best_fit_offsets(problem);
  for (const HoleFit fit : {HoleFit::best, HoleFit::first}) {
    OffsetPlan p = smartpool_offsets(problem, fit);
    if (p.footprint < best.footprint) best = std::move(p);
  }
  return best;
}

CACHEDARRAYS_INLINE void mip_check_options(const MipOptions& options) {
  if (!(options.time_limit_seconds > 0) || !std::isfinite(options.time_limit_seconds)) {
    throw invalid_argument("mip_offsets: time_limit_seconds is " + std::to_string(options.time_limit_seconds) +
                           "; it must be a positive number of seconds");
  }
  if (!(options.relative_gap >= 0 && options.relative_gap < 1)) {
    throw invalid_argument("mip_offsets: relative_gap is " + std::to_string(options.relative_gap) +
                           "; it must be in [0, 1) (0: search until the optimum is proven)");
  }
}

// The MIP's unit of bytes: the gcd g of the sizes and the alignment divides
// every size, aligned size, offset of a plan made of them and footprint, so
// the MIP is written in multiples of g: smaller coefficients (a tighter
// big-M numerically), and an integral footprint u, which lets Cbc close the
// gap as soon as its bound passes the incumbent minus one.
struct MipUnits {
  std::uint64_t g = 1;
  explicit MipUnits(const DsaProblem& problem) : g(problem.alignment()) {
    for (const DsaBuffer& b : problem.buffers()) g = std::gcd(g, b.size);
  }
  [[nodiscard]] double operator()(std::uint64_t bytes) const { return static_cast<double>(bytes / g); }
};

// The MIP's columns: u, x_0 .. x_{n-1} (the offsets), z_0 .. z_{m-1} (the
// order of each colliding pair).
struct MipColumns {
  std::size_t n = 0;
  std::size_t m = 0;
  static constexpr int u = 0;
  [[nodiscard]] int x(std::size_t i) const { return static_cast<int>(1 + i); }
  [[nodiscard]] int z(std::size_t k) const { return static_cast<int>(1 + n + k); }
  [[nodiscard]] std::size_t count() const { return 1 + n + m; }
  [[nodiscard]] std::size_t rows() const { return n + 2 * m; }
  [[nodiscard]] std::size_t nonzeros() const { return 2 * n + 6 * m; }
};

// Cbc indexes rows and columns by int and nonzeros by CoinBigIndex.
CACHEDARRAYS_INLINE void mip_check_size(const MipColumns& columns) {
  if (columns.count() > static_cast<std::size_t>(std::numeric_limits<int>::max()) ||
      columns.rows() > static_cast<std::size_t>(std::numeric_limits<int>::max()) ||
      columns.nonzeros() > static_cast<std::size_t>(std::numeric_limits<CoinBigIndex>::max())) {
    throw invalid_argument("mip_offsets: " + std::to_string(columns.n) + " buffers with " + std::to_string(columns.m) +
                           " pairs alive together make a MIP of " + std::to_string(columns.rows()) +
                           " rows, more than Cbc indexes; plan it with best_fit_offsets or smartpool_offsets");
  }
}

// The rows of the MIP, column by column, with their right-hand sides and
// the bounds they need: rows 0 .. n-1 are (2), rows n + 2k and n + 2k + 1
// are (3) and (4) of pair k; every row is "<= rhs". `ub`: the incumbent's
// footprint in units.
struct MipMatrix {
  std::vector<std::vector<std::pair<int, double>>> column;
  std::vector<double> row_upper;  // no row has a lower bound
  std::vector<double> col_lower;
  std::vector<double> col_upper;
};
CACHEDARRAYS_INLINE MipMatrix mip_matrix(const DsaProblem& problem,
                                         const std::vector<std::pair<std::uint32_t, std::uint32_t>>& pairs,
                                         const MipColumns& cols, const MipUnits& units, double ub) {
  const std::vector<DsaBuffer>& buffers = problem.buffers();
  MipMatrix a{std::vector<std::vector<std::pair<int, double>>>(cols.count()), std::vector<double>(cols.rows()),
              std::vector<double>(cols.count(), 0.0), std::vector<double>(cols.count(), 1.0)};
  const auto size_of = [&](std::size_t i) { return units(buffers[i].size); };
  const auto aligned_of = [&](std::size_t i) { return units(problem.aligned_size(i)); };
  // (2) x_i + w_i <= u: the footprint is above every buffer's top (its size,
  // not its aligned size: the heap ends at the last byte used).
  for (std::size_t i = 0; i < cols.n; ++i) {
    const int r = static_cast<int>(i);
    a.column[cols.x(i)].emplace_back(r, 1.0);
    a.column[MipColumns::u].emplace_back(r, -1.0);
    a.row_upper[i] = -size_of(i);
  }
  // (3) x_i + w_i <= x_j + z_ij W and (4) x_j + w_j <= x_i + (1 - z_ij) W
  // for every colliding pair: z_ij = 0 puts i below j, 1 puts j below i. A
  // buffer below another leaves its aligned size, so that the other's offset
  // stays a multiple of the alignment. W, the paper's bound on u, is here
  // the least big-M each row needs given the bounds below: x_i <= ub - w_i
  // and x_j >= 0 make x_i + a_i - x_j <= ub - w_i + a_i.
  for (std::size_t k = 0; k < cols.m; ++k) {
    const auto [i, j] = pairs[k];
    const int r3 = static_cast<int>(cols.n + 2 * k);
    const int r4 = r3 + 1;
    const double big_m3 = ub - size_of(i) + aligned_of(i);
    const double big_m4 = ub - size_of(j) + aligned_of(j);
    a.column[cols.x(i)].emplace_back(r3, 1.0);
    a.column[cols.x(j)].emplace_back(r3, -1.0);
    a.column[cols.z(k)].emplace_back(r3, -big_m3);
    a.row_upper[static_cast<std::size_t>(r3)] = -aligned_of(i);
    a.column[cols.x(j)].emplace_back(r4, 1.0);
    a.column[cols.x(i)].emplace_back(r4, -1.0);
    a.column[cols.z(k)].emplace_back(r4, big_m4);
    a.row_upper[static_cast<std::size_t>(r4)] = big_m4 - aligned_of(j);
    // Interchangeable buffers: the lower index goes below (see
    // mip_order_identical).
    if (buffers[i] == buffers[j]) a.col_upper[cols.z(k)] = 0;
  }
  return a;
}

// Sekiyama et al.'s MIP, formulation (1)-(6), in Cbc's compressed sparse
// columns, without a start. `lb` and `ub` (units) bound the footprint u.
CACHEDARRAYS_INLINE MipProblem mip_model(const DsaProblem& problem,
                                         const std::vector<std::pair<std::uint32_t, std::uint32_t>>& pairs,
                                         const MipColumns& cols, const MipUnits& units, double lb, double ub) {
  MipMatrix a = mip_matrix(problem, pairs, cols, units, ub);
  // (5) and (6), with the symmetry-reducing bounds: u lies between max-live
  // counting the alignment (no solution is lower; mip_aligned_max_live) and
  // the incumbent (no better solution is higher), and so x_i <= ub - w_i.
  a.col_lower[MipColumns::u] = lb;
  a.col_upper[MipColumns::u] = ub;
  for (std::size_t i = 0; i < cols.n; ++i) a.col_upper[cols.x(i)] = ub - units(problem.buffers()[i].size);

  MipProblem mip;
  mip.start.assign(cols.count() + 1, 0);
  mip.index.reserve(cols.nonzeros());
  mip.value.reserve(cols.nonzeros());
  for (std::size_t c = 0; c < cols.count(); ++c) {
    for (const auto& [r, v] : a.column[c]) {
      mip.index.push_back(r);
      mip.value.push_back(v);
    }
    mip.start[c + 1] = static_cast<CoinBigIndex>(mip.index.size());
  }
  a.column = {};
  mip.col_lower = std::move(a.col_lower);
  mip.col_upper = std::move(a.col_upper);
  mip.row_upper = std::move(a.row_upper);
  mip.objective.assign(cols.count(), 0.0);
  mip.objective[MipColumns::u] = 1.0;  // (1) min u
  // u is integral at an optimum (offsets are sums of sizes), z binary.
  mip.integer.assign(cols.count(), 0);
  mip.integer[MipColumns::u] = 1;
  for (std::size_t k = 0; k < cols.m; ++k) mip.integer[static_cast<std::size_t>(cols.z(k))] = 1;
  return mip;
}

// The warm start `plan` in the MIP's variables: its offsets, its footprint
// (`ub`, in units), and the order of each colliding pair.
CACHEDARRAYS_INLINE std::vector<double> mip_start_values(
    const OffsetPlan& plan, const std::vector<std::pair<std::uint32_t, std::uint32_t>>& pairs, const MipColumns& cols,
    const MipUnits& units, double ub) {
  std::vector<double> values(cols.count(), 0.0);
  values[MipColumns::u] = ub;
  for (std::size_t i = 0; i < cols.n; ++i) values[cols.x(i)] = units(plan.offsets[i]);
  for (std::size_t k = 0; k < cols.m; ++k) {
    values[cols.z(k)] = plan.offsets[pairs[k].first] < plan.offsets[pairs[k].second] ? 0.0 : 1.0;
  }
  return values;
}

// Why a search that proved nothing stopped, for MipResult::status.
CACHEDARRAYS_INLINE std::string mip_stop_reason(const MipOutcome& outcome, const MipOptions& options) {
  const int secondary = outcome.secondary_status;
  if (secondary == 4 || outcome.seconds_limit_reached) {
    return "stopped at the time limit of " + mip_format_number(options.time_limit_seconds) + " s";
  }
  if (secondary == 2) return "stopped at the relative gap " + mip_format_number(options.relative_gap);
  return "stopped with Cbc's secondary status " + std::to_string(secondary);
}

// The result's optimality, bound, gap and status for its plan; `optimal`
// also when the plan meets `lower_bound`.
CACHEDARRAYS_INLINE void mip_finish(MipResult& result, bool optimal, double lower_bound, std::string status) {
  const auto footprint = static_cast<double>(result.plan.footprint);
  result.optimal = optimal || footprint <= lower_bound;
  result.lower_bound = result.optimal ? footprint : std::min(lower_bound, footprint);
  result.gap = footprint == 0 ? 0 : (footprint - result.lower_bound) / footprint;
  result.status = std::move(status);
}

}  // namespace detail

CACHEDARRAYS_INLINE std::size_t colliding_pairs(const DsaProblem& problem) {
  return detail::mip_colliding_pairs(problem).size();
}

CACHEDARRAYS_INLINE MipResult mip_offsets(const DsaProblem& problem, const MipOptions& options) {
  const auto began = std::chrono::steady_clock::now();
  detail::mip_check_options(options);
  MipResult result;
  result.plan = detail::mip_incumbent(problem, options);
  const std::uint64_t lowest_bytes = detail::mip_aligned_max_live(problem);  // >= max-live
  const auto lowest = static_cast<double>(lowest_bytes);
  const auto finish = [&](bool optimal, double lower_bound, std::string status) {
    detail::mip_finish(result, optimal, lower_bound, std::move(status));
    result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
    return result;
  };
  // A footprint at the lower bound is optimal whatever the placement:
  // nothing to search.
  if (result.plan.footprint <= lowest_bytes) {
    return finish(true, lowest, "optimal: the warm start meets the lower bound");
  }

  const detail::MipUnits units(problem);
  const double ub = units(result.plan.footprint);  // no need to search above the incumbent
  const auto pairs = detail::mip_colliding_pairs(problem);
  const detail::MipColumns cols{problem.size(), pairs.size()};
  detail::mip_check_size(cols);
  detail::MipProblem mip = detail::mip_model(problem, pairs, cols, units, units(lowest_bytes), ub);
  mip.start_values =
      detail::mip_start_values(detail::mip_order_identical(problem, result.plan), pairs, cols, units, ub);

  const std::string what = "mip_offsets: Cbc, on " + std::to_string(cols.n) + " buffers and " + std::to_string(cols.m) +
                           " colliding pairs, ";
  const detail::MipOutcome outcome = detail::solve_mip(mip, options.time_limit_seconds, options.relative_gap, what);
  const int secondary = outcome.secondary_status;
  if (outcome.solution.empty() && secondary == 1) {
    throw error(what + "calls the MIP infeasible, though the warm start of footprint " +
                std::to_string(result.plan.footprint) + " bytes is a solution");
  }

  // Cbc's best solution, as the order of its binaries (exact offsets), if
  // it beats the incumbent.
  if (!outcome.solution.empty()) {
    std::vector<bool> first_below(cols.m);
    for (std::size_t k = 0; k < cols.m; ++k) {
      first_below[k] = outcome.solution[static_cast<std::size_t>(cols.z(k))] < 0.5;
    }
    OffsetPlan found = detail::mip_plan_from_order(problem, pairs, first_below);
    if (found.footprint < result.plan.footprint) result.plan = std::move(found);
  }
  // Cbc's bound in bytes: the optimum is a whole number of units, so a bound
  // of 41.2 units means 42.
  const auto unit = static_cast<double>(units.g);
  const double lower_bound = std::max(lowest, std::ceil(outcome.bound - 1e-6) * unit);
  // Cbc reports proven optimal also when it stops on the gap; only a
  // completed search (secondary status 0) proves the optimum, and only if
  // the plan reaches Cbc's objective.
  const double objective_bytes = std::round(outcome.objective) * unit;
  const auto footprint = static_cast<double>(result.plan.footprint);
  const bool proven =
      (outcome.proven_optimal && secondary == 0 && footprint <= objective_bytes) || footprint <= lower_bound;
  const std::string nodes = std::to_string(outcome.nodes) + (outcome.nodes == 1 ? " node" : " nodes");
  if (proven) return finish(true, lower_bound, "optimal: proven by Cbc (" + nodes + ")");
  return finish(false, lower_bound, detail::mip_stop_reason(outcome, options) + " (" + nodes + ")");
}

}  // namespace cachedarrays::plan
