// What every solve with COIN-OR Cbc in the plan layer needs (dsa_mip,
// autotm): one MIP in compressed sparse columns in, Cbc's outcome out, one
// solve at a time, and a time limit that holds. Private to the plan layer's
// -inl files.
//
// Cbc's C++ API, not its C interface: Cbc 2.10's root dive heuristics
// (CbcHeuristicDive, run before the first branch) do not look at the
// "seconds" limit, only at their own maxTime (CbcHeuristicDive::setMaxTime),
// which the C interface cannot reach. On AutoTM's largest ILPs the
// DiveCoefficient dive ran past the limit by more than the limit itself.
// Through CbcMain1's callback, just before branch and bound (whereFrom 3),
// every dive gets the time left as its own limit.
#pragma once

#include "cachedarrays/error.hpp"

#include <coin/CbcHeuristicDive.hpp>
#include <coin/CbcModel.hpp>
#include <coin/CbcSolver.hpp>
#include <coin/OsiClpSolverInterface.hpp>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <mutex>
#include <string>
#include <system_error>
#include <vector>

namespace cachedarrays::plan::detail {

// Cbc's CbcMain1 keeps state in statics (Cbc 2.10: CbcMain is not thread
// safe, a known upstream limitation): one solve at a time.
inline std::mutex& mip_solver_mutex() {
  static std::mutex m;
  return m;
}

// The shortest text that reads back as `v` (1e-07, 0.25): Cbc's parameters
// are text, and std::to_string would round small limits to "0.000000".
inline std::string mip_format_number(double v) {
  char text[32];
  const auto [end, ec] = std::to_chars(text, text + sizeof text, v);
  return ec == std::errc{} ? std::string(text, end) : std::to_string(v);
}

// A minimisation MIP, every row "<= row_upper" (no row has a lower bound),
// its matrix in compressed sparse columns (column c's entries are
// index/value[start[c] .. start[c + 1])), and a MIP start for every column.
struct MipProblem {
  std::vector<CoinBigIndex> start;
  std::vector<int> index;
  std::vector<double> value;
  std::vector<double> col_lower, col_upper, objective, row_upper;
  std::vector<char> integer;  // per column: nonzero = integral
  std::vector<double> start_values;
};

// What Cbc ended with. `solution` is empty when it found none.
struct MipOutcome {
  std::vector<double> solution;
  double objective = 0;  // of `solution`, Cbc's
  double bound = 0;      // Cbc's best possible objective
  bool proven_optimal = false;
  int secondary_status = 0;  // Cbc's: 0 search completed, 2 gap reached, 4 time limit, ...
  bool seconds_limit_reached = false;
  int nodes = 0;
  double seconds = 0;  // wall time of the solve
};

// The deadline of the solve in progress, for the callback below (which
// takes no user data); guarded by mip_solver_mutex.
inline std::chrono::steady_clock::time_point& mip_deadline() {
  static std::chrono::steady_clock::time_point deadline;
  return deadline;
}

// CbcMain1's callback. At whereFrom 3 (the heuristics are in place, branch
// and bound about to start) each dive may run only for the time left.
// The dive counts CPU time (CoinCpuTime), which never runs ahead of wall
// time, so this limit is never earlier than the one asked for.
inline int mip_cap_heuristics(CbcModel* model, int where_from) {
  if (where_from != 3 || model == nullptr) return 0;
  const double left = std::chrono::duration<double>(mip_deadline() - std::chrono::steady_clock::now()).count();
  for (int i = 0; i < model->numberHeuristics(); ++i) {
    if (auto* dive = dynamic_cast<CbcHeuristicDive*>(model->heuristic(i)); dive != nullptr) {
      dive->setMaxTime(std::max(0.01, left));
    }
  }
  return 0;
}

// Solves `problem` within `time_limit_seconds` of wall time, stopping at
// `relative_gap` (0: only a proven optimum). Throws `error` prefixed by
// `what` when Cbc abandons the search, is interrupted or fails; an
// infeasible problem is the caller's to judge (no solution, not proven
// optimal, secondary status 1).
inline MipOutcome solve_mip(const MipProblem& problem, double time_limit_seconds, double relative_gap,
                            const std::string& what) {
  const auto cols = static_cast<int>(problem.objective.size());
  const auto rows = static_cast<int>(problem.row_upper.size());
  std::lock_guard lock(mip_solver_mutex());
  const auto began = std::chrono::steady_clock::now();
  mip_deadline() = began + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                               std::chrono::duration<double>(time_limit_seconds));
  OsiClpSolverInterface solver;
  solver.messageHandler()->setLogLevel(0);
  solver.loadProblem(cols, rows, problem.start.data(), problem.index.data(), problem.value.data(),
                     problem.col_lower.data(), problem.col_upper.data(), problem.objective.data(),
                     /*rowlb: -infinity*/ nullptr, problem.row_upper.data());
  solver.setObjSense(1);  // minimise
  for (int c = 0; c < cols; ++c) {
    if (problem.integer[static_cast<std::size_t>(c)] != 0) solver.setInteger(c);
  }
  CbcModel model(solver);
  CbcSolverUsefulData data;
  CbcMain0(model, data);
  // The MIP start by column names, as CbcModel takes it (and as Cbc's C
  // interface's Cbc_setMIPStartI passes it).
  std::vector<std::string> names(static_cast<std::size_t>(cols));
  std::vector<const char*> name_texts(static_cast<std::size_t>(cols));
  for (int c = 0; c < cols; ++c) {
    names[static_cast<std::size_t>(c)] = model.solver()->getColName(c);
    name_texts[static_cast<std::size_t>(c)] = names[static_cast<std::size_t>(c)].c_str();
  }
  model.setMIPStart(cols, name_texts.data(), problem.start_values.data());

  const std::string seconds = mip_format_number(time_limit_seconds);
  const std::string gap = mip_format_number(relative_gap);
  std::vector<const char*> argv = {"cachedarrays", "-log", "0",
                                   // Cbc 2.10.8 (Debian 12) crashes in CglPreProcess::postProcess
                                   // when the time limit ends the search soon after its
                                   // preprocessing: on the MiniMalloc instances, runs with short
                                   // limits died with SIGSEGV or SIGABRT, none without it; and
                                   // tests/dsa_mip_tests.cpp takes no longer without it.
                                   "-preprocess", "off",
                                   // The limit is wall time, as the results' seconds.
                                   "-timeMode", "elapsed", "-seconds", seconds.c_str()};
  if (relative_gap > 0) {
    argv.push_back("-ratioGap");
    argv.push_back(gap.c_str());
  }
  argv.push_back("-solve");
  argv.push_back("-quit");
  try {
    CbcMain1(static_cast<int>(argv.size()), argv.data(), model, mip_cap_heuristics, data);
  } catch (const CoinError& e) {
    throw error(what + "failed in Cbc: " + e.message() + " (" + e.className() + "::" + e.methodName() + ")");
  }

  MipOutcome outcome;
  outcome.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
  const int status = model.status();
  if (status == 2 || model.isAbandoned()) throw error(what + "abandoned the search (numerical difficulties)");
  if (status == 5) throw error(what + "was interrupted (a signal or an event handler)");
  if (status != 0 && status != 1 && status != -1) throw error(what + "ended with status " + std::to_string(status));
  if (const double* best = model.bestSolution(); best != nullptr) {
    outcome.solution.assign(best, best + cols);
    outcome.objective = model.getObjValue();
  }
  outcome.bound = model.getBestPossibleObjValue();
  outcome.proven_optimal = model.isProvenOptimal();
  outcome.secondary_status = model.secondaryStatus();
  outcome.seconds_limit_reached = model.isSecondsLimitReached();
  outcome.nodes = model.getNodeCount();
  return outcome;
}

}  // namespace cachedarrays::plan::detail
