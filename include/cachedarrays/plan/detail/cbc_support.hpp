// What every solve with COIN-OR Cbc in the plan layer needs (dsa_mip,
// autotm): one solve at a time, the model freed whatever happens, and
// numbers as Cbc's text parameters. Private to the plan layer's -inl files.
#pragma once

#include <coin/Cbc_C_Interface.h>

#include <charconv>
#include <memory>
#include <mutex>
#include <string>
#include <system_error>

namespace cachedarrays::plan::detail {

// Cbc's CbcMain1, which Cbc_solve runs, keeps state in statics (Cbc 2.10;
// coin-or/Cbc issue 332, "CbcMain not thread safe"): one solve at a time.
inline std::mutex& mip_solver_mutex() {
  static std::mutex m;
  return m;
}

struct CbcModelDeleter {
  void operator()(Cbc_Model* model) const noexcept { Cbc_deleteModel(model); }
};
using CbcModelPtr = std::unique_ptr<Cbc_Model, CbcModelDeleter>;

// The shortest text that reads back as `v` (1e-07, 0.25): Cbc's parameters
// are text, and std::to_string would round small limits to "0.000000".
inline std::string mip_format_number(double v) {
  char text[32];
  const auto [end, ec] = std::to_chars(text, text + sizeof text, v);
  return ec == std::errc{} ? std::string(text, end) : std::to_string(v);
}

// The settings every solve here runs with: quiet, a wall-clock time limit,
// and the relative gap that ends the search (0: only a proven optimum).
inline void set_solve_limits(Cbc_Model* model, double time_limit_seconds, double relative_gap) {
  Cbc_setParameter(model, "log", "0");
  // Cbc 2.10.8 (Debian 12) crashes in CglPreProcess::postProcess when the
  // time limit ends the search soon after its preprocessing: on the
  // MiniMalloc instances, 23 of 48 runs with limits of 0.01-0.6 s died with
  // SIGSEGV or SIGABRT, none without it; tests/dsa_mip_tests.cpp took the
  // same time either way.
  Cbc_setParameter(model, "preprocess", "off");
  Cbc_setParameter(model, "timeMode", "elapsed");  // the limit is wall time, as the results' seconds
  Cbc_setParameter(model, "seconds", mip_format_number(time_limit_seconds).c_str());
  if (relative_gap > 0) Cbc_setParameter(model, "ratioGap", mip_format_number(relative_gap).c_str());
}

}  // namespace cachedarrays::plan::detail
