// Implementation of autotm.hpp (header-only mode includes it from there; the
// compiled library from src/plan/plan.cpp).
#pragma once

#include "cachedarrays/config.hpp"
#include "cachedarrays/plan/autotm.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include "cachedarrays/error.hpp"
#include "cachedarrays/plan/detail/cbc_support.hpp"

namespace cachedarrays::plan {

CACHEDARRAYS_INLINE const char* to_string(AutotmFormulation formulation) noexcept {
  switch (formulation) {
    case AutotmFormulation::static_placement: return "static";
    case AutotmFormulation::synchronous: return "synchronous";
    case AutotmFormulation::asynchronous: return "asynchronous";
  }
  return "?";
}

CACHEDARRAYS_INLINE AutotmCosts AutotmCosts::from_model(const Program& program, const KernelTimeModel& model,
                                                      const emulation::Bandwidth& dram,
                                                      const emulation::Bandwidth& pmm) {
  if (!(dram.read_gbps > 0 && dram.write_gbps > 0 && pmm.read_gbps > 0 && pmm.write_gbps > 0)) {
    throw invalid_argument("AutotmCosts::from_model: every bandwidth must be > 0 GB/s");
  }
  AutotmCosts costs;
  costs.to_pmm_gbps = pmm.write_gbps;
  costs.to_dram_gbps = pmm.read_gbps;
  const auto gbps = [](const emulation::Bandwidth& tier, Access access) {
    return access == Access::read ? tier.read_gbps : tier.write_gbps;
  };
  for (const ProgramKernel& k : program.kernels()) {
    std::vector<ArgTraffic> args;
    for (const ProgramArg& a : k.args) args.push_back({a.bytes, a.access, gbps(dram, a.access)});
    const double fast = model.seconds(k.name, args);
    costs.dram_seconds.push_back(fast);
    std::vector<double> penalty;
    for (std::size_t j = 0; j < args.size(); ++j) {
      args[j].gbps = gbps(pmm, k.args[j].access);
      penalty.push_back(std::max(0.0, model.seconds(k.name, args) - fast));
      args[j].gbps = gbps(dram, k.args[j].access);
    }
    costs.pmm_penalty.push_back(std::move(penalty));
  }
  return costs;
}

namespace detail {

// The ILP in Cbc's terms: columns with bounds and objective coefficients,
// rows as (row, column, coefficient) entries with an upper bound each.
struct AutotmModel {
  std::vector<double> col_lower, col_upper, objective;
  std::vector<std::tuple<int, int, double>> entries;
  std::vector<double> row_upper;

  int column(double objective_coefficient, double upper = 1) {
    col_lower.push_back(0);
    col_upper.push_back(upper);
    objective.push_back(objective_coefficient);
    return static_cast<int>(objective.size() - 1);
  }
  // sum coefficient * column <= upper
  void row(const std::vector<std::pair<int, double>>& terms, double upper) {
    const auto r = static_cast<int>(row_upper.size());
    for (const auto& [c, v] : terms) entries.emplace_back(r, c, v);
    row_upper.push_back(upper);
  }
};

}  // namespace detail

CACHEDARRAYS_INLINE AutotmPlan autotm_plan(const Program& program, const AutotmCosts& costs,
                                           const AutotmOptions& options) {
  const auto t0 = std::chrono::steady_clock::now();
  const std::vector<ProgramKernel>& kernels = program.kernels();
  const std::vector<ProgramObject>& objects = program.objects();
  const std::size_t nk = kernels.size();
  if (costs.dram_seconds.size() != nk || costs.pmm_penalty.size() != nk) {
    throw invalid_argument("autotm_plan: the costs cover " + std::to_string(costs.dram_seconds.size()) +
                           " kernels, the program has " + std::to_string(nk));
  }
  for (std::size_t k = 0; k < nk; ++k) {
    if (costs.pmm_penalty[k].size() != kernels[k].args.size()) {
      throw invalid_argument("autotm_plan: kernel " + std::to_string(k) + " has " +
                             std::to_string(kernels[k].args.size()) + " arguments but " +
                             std::to_string(costs.pmm_penalty[k].size()) + " PMM penalties");
    }
  }
  if (options.formulation == AutotmFormulation::synchronous && !(costs.to_pmm_gbps > 0 && costs.to_dram_gbps > 0)) {
    throw invalid_argument("autotm_plan: the synchronous formulation needs copy bandwidths > 0 GB/s");
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
  const bool sync = options.formulation == AutotmFormulation::synchronous;

  // Columns: x(o,i) and y(o,i) for the i-th use of object o (§3.3); in the
  // static formulation one column s(o) stands for all of them (Figure 6a).
  detail::AutotmModel m;
  std::vector<std::vector<int>> x(objects.size()), y(objects.size());
  std::vector<std::vector<int>> move_in(objects.size()), move_out(objects.size());
  for (std::uint32_t o = 0; o < objects.size(); ++o) {
    const std::vector<std::uint32_t>& uses = program.uses(o);
    if (uses.empty()) continue;
    const auto bytes = static_cast<double>(objects[o].bytes);
    const bool persistent = objects[o].persistent;
    if (!sync) {
      const int s = m.column(0);
      x[o].assign(uses.size(), s);
      y[o].assign(uses.size(), s);
      continue;
    }
    for (std::size_t i = 0; i < uses.size(); ++i) {
      x[o].push_back(m.column(0));
      // A created object is freed after its last use: nothing stays.
      const bool freed = !persistent && i + 1 == uses.size();
      y[o].push_back(m.column(0, freed ? 0 : 1));
    }
    for (std::size_t i = 0; i < uses.size(); ++i) {
      // y <= x: an object gets into DRAM only just before a use.
      m.row({{y[o][i], 1}, {x[o][i], -1}}, 0);
      // y(i) <= x(next use): what stays in DRAM after a use is still there
      // at the next one (it leaves only by a move right after a use, y = 0).
      if (i + 1 < uses.size()) {
        m.row({{y[o][i], 1}, {x[o][i + 1], -1}}, 0);
      } else if (persistent) {
        m.row({{y[o][i], 1}, {x[o][0], -1}}, 0);
      }
      // In before use i when in DRAM during it but not left there after
      // the use before (the last one, around the iteration, for a
      // persistent object; a created object is created where use 0 wants it).
      if (i > 0 || persistent) {
        const int before = i > 0 ? y[o][i - 1] : y[o].back();
        const int p = m.column(bytes / (costs.to_dram_gbps * 1e9));
        m.row({{x[o][i], 1}, {before, -1}, {p, -1}}, 0);
        move_in[o].push_back(p);
      } else {
        move_in[o].push_back(-1);
      }
      // Out after use i when in DRAM during it and not after (moves cost
      // |t| / bandwidth each, §3.6; the write-once saving is not taken).
      if (!persistent && i + 1 == uses.size()) {
        move_out[o].push_back(-1);
      } else {
        const int q = m.column(bytes / (costs.to_pmm_gbps * 1e9));
        m.row({{x[o][i], 1}, {y[o][i], -1}, {q, -1}}, 0);
        move_out[o].push_back(q);
      }
    }
  }

  // Objective (1)/(2): rho_k = n_DRAM + sum_a delta(k,a) (1 - x(a,k)).
  double constant = 0;
  const auto use_of = [&](std::uint32_t o, std::uint32_t k) {
    const std::vector<std::uint32_t>& uses = program.uses(o);
    return static_cast<std::size_t>(std::lower_bound(uses.begin(), uses.end(), k) - uses.begin());
  };
  for (std::size_t k = 0; k < nk; ++k) {
    constant += costs.dram_seconds[k];
    for (std::size_t j = 0; j < kernels[k].args.size(); ++j) {
      const std::uint32_t o = kernels[k].args[j].object;
      const double delta = costs.pmm_penalty[k][j];
      constant += delta;
      m.objective[static_cast<std::size_t>(x[o][use_of(o, static_cast<std::uint32_t>(k))])] -= delta;
    }
  }

  // DRAM limit per kernel (5), over the objects alive at each kernel.
  std::vector<bool> alive(objects.size());
  for (std::uint32_t o = 0; o < objects.size(); ++o) alive[o] = objects[o].persistent;
  for (const ProgramStep& step : program.steps()) {
    if (step.kind == StepKind::create) alive[step.index] = true;
    if (step.kind == StepKind::retire) alive[step.index] = false;
    if (step.kind != StepKind::kernel) continue;
    const std::uint32_t k = step.index;
    std::vector<std::pair<int, double>> terms;
    std::vector<bool> io(objects.size());
    for (const ProgramArg& a : kernels[k].args) {
      if (io[a.object]) continue;
      io[a.object] = true;
      terms.emplace_back(x[a.object][use_of(a.object, k)], static_cast<double>(objects[a.object].bytes));
    }
    for (std::uint32_t o = 0; o < objects.size(); ++o) {
      if (!alive[o] || io[o] || x[o].empty()) continue;
      // ref(k, t): where o was left by its last use before k.
      const std::size_t next = use_of(o, k);
      int where = -1;
      if (next > 0) where = y[o][next - 1];
      else if (objects[o].persistent) where = y[o].back();
      else where = x[o][0];  // created for a later kernel: counted where that kernel wants it
      terms.emplace_back(where, static_cast<double>(objects[o].bytes));
    }
    const std::uint64_t limit = options.kernel_limits.empty() ? options.dram_limit : options.kernel_limits[k];
    if (!terms.empty()) m.row(terms, static_cast<double>(limit));
  }

  // Column-major for Cbc_loadProblem.
  const std::size_t cols = m.objective.size();
  const std::size_t rows = m.row_upper.size();
  std::sort(m.entries.begin(), m.entries.end(),
            [](const auto& a, const auto& b) { return std::tie(std::get<1>(a), std::get<0>(a)) < std::tie(std::get<1>(b), std::get<0>(b)); });
  std::vector<CoinBigIndex> start(cols + 1, 0);
  std::vector<int> index;
  std::vector<double> value;
  for (const auto& [r, c, v] : m.entries) {
    ++start[static_cast<std::size_t>(c) + 1];
    index.push_back(r);
    value.push_back(v);
  }
  for (std::size_t c = 0; c < cols; ++c) start[c + 1] += start[c];

  AutotmPlan plan;
  std::vector<double> solution(cols, 0.0);  // all in PMM: always within the limits
  {
    std::lock_guard lock(detail::mip_solver_mutex());
    detail::CbcModelPtr model(Cbc_newModel());
    if (!model) throw error("autotm_plan: Cbc_newModel failed (out of memory?)");
    Cbc_loadProblem(model.get(), static_cast<int>(cols), static_cast<int>(rows), start.data(), index.data(),
                    value.data(), m.col_lower.data(), m.col_upper.data(), m.objective.data(), nullptr,
                    m.row_upper.data());
    Cbc_setObjSense(model.get(), 1);
    for (std::size_t c = 0; c < cols; ++c) Cbc_setInteger(model.get(), static_cast<int>(c));
    std::vector<int> all(cols);
    for (std::size_t c = 0; c < cols; ++c) all[c] = static_cast<int>(c);
    Cbc_setMIPStartI(model.get(), static_cast<int>(cols), all.data(), solution.data());
    detail::set_solve_limits(model.get(), options.time_limit_seconds, options.relative_gap);
    Cbc_solve(model.get());
    const int status = Cbc_status(model.get());
    if (status == 2 || Cbc_isAbandoned(model.get())) throw error("autotm_plan: Cbc abandoned the search (numerical difficulties)");
    if (status == 5) throw error("autotm_plan: Cbc was interrupted");
    if (Cbc_isProvenInfeasible(model.get())) {
      throw error("autotm_plan: Cbc calls the ILP infeasible, though everything in PMM is a solution");
    }
    if (const double* best = Cbc_bestSolution(model.get()); best != nullptr) solution.assign(best, best + cols);
    double objective = 0;
    for (std::size_t c = 0; c < cols; ++c) objective += m.objective[c] * std::round(solution[c]);
    const double bound = Cbc_getBestPossibleObjValue(model.get());
    plan.modeled_seconds = constant + objective;
    plan.gap = plan.modeled_seconds > 0 ? std::max(0.0, (objective - bound) / plan.modeled_seconds) : 0;
    const bool stopped = Cbc_isSecondsLimitReached(model.get()) != 0;
    plan.optimal = !stopped && plan.gap <= options.relative_gap + 1e-9;
    plan.status = stopped ? "stopped at the time limit of " + detail::mip_format_number(options.time_limit_seconds) +
                                " s; the best plan found, gap " + detail::mip_format_number(plan.gap)
                          : "optimal within the relative gap " + detail::mip_format_number(options.relative_gap);
  }
  const auto on = [&](int c) { return c >= 0 && solution[static_cast<std::size_t>(c)] > 0.5; };
  plan.in_dram.resize(nk);
  for (std::size_t k = 0; k < nk; ++k) {
    for (const ProgramArg& a : kernels[k].args) {
      plan.in_dram[k].push_back(on(x[a.object][use_of(a.object, static_cast<std::uint32_t>(k))]));
    }
  }
  for (std::uint32_t o = 0; o < objects.size(); ++o) {
    const std::vector<std::uint32_t>& uses = program.uses(o);
    for (std::size_t i = 0; i < move_in[o].size(); ++i) {
      if (on(move_in[o][i])) plan.moves.push_back({o, uses[i], true});
      if (on(move_out[o][i])) plan.moves.push_back({o, uses[i], false});
    }
  }
  // Program order: by kernel, the moves in before a kernel ahead of those out after it.
  std::sort(plan.moves.begin(), plan.moves.end(), [](const AutotmMove& a, const AutotmMove& b) {
    return std::tuple(a.kernel, !a.to_dram, a.object) < std::tuple(b.kernel, !b.to_dram, b.object);
  });
  plan.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return plan;
}

}  // namespace cachedarrays::plan
