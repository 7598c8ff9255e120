// Implementation of tier_costs.hpp (header-only mode includes it from there;
// the compiled library from src/plan/plan.cpp).
#pragma once

#include "cachedarrays/config.hpp"
#include "cachedarrays/plan/program/tier_costs.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "cachedarrays/error.hpp"

namespace cachedarrays::plan {

CACHEDARRAYS_INLINE void TierCosts::check(const Program& program, std::string_view who) const {
  const TierCosts& costs = *this;
  const std::string at(who);
  const std::vector<ProgramKernel>& kernels = program.kernels();
  const auto bad = [](double s) { return !(s >= 0 && std::isfinite(s)); };
  if (costs.fast_seconds.size() != kernels.size() || costs.slow_penalty.size() != kernels.size()) {
    throw invalid_argument(at + ": the costs give " + std::to_string(costs.fast_seconds.size()) + " kernel times and " +
                           std::to_string(costs.slow_penalty.size()) +
                           " rows of slow-tier penalties, the program has " + std::to_string(kernels.size()) +
                           " kernels; give one of each per kernel (TierCosts::from_model)");
  }
  for (std::size_t k = 0; k < kernels.size(); ++k) {
    if (bad(costs.fast_seconds[k])) {
      throw invalid_argument(at + ": kernel " + std::to_string(k) + " takes " + std::to_string(costs.fast_seconds[k]) +
                             " s (fast_seconds); a time is finite and >= 0");
    }
    if (costs.slow_penalty[k].size() != kernels[k].args.size()) {
      throw invalid_argument(at + ": kernel " + std::to_string(k) + " has " + std::to_string(kernels[k].args.size()) +
                             " arguments but " + std::to_string(costs.slow_penalty[k].size()) +
                             " slow-tier penalties; give one per argument");
    }
    for (std::size_t a = 0; a < kernels[k].args.size(); ++a) {
      if (bad(costs.slow_penalty[k][a])) {
        throw invalid_argument(at + ": argument " + std::to_string(a) + " of kernel " + std::to_string(k) + " adds " +
                               std::to_string(costs.slow_penalty[k][a]) +
                               " s in the slow tier (slow_penalty); a penalty is finite and >= 0");
      }
    }
  }
  const auto ok = [](double gbps) { return gbps > 0 && std::isfinite(gbps); };
  if (!ok(costs.to_slow_gbps) || !ok(costs.to_fast_gbps)) {
    throw invalid_argument(at + ": copies out go at to_slow_gbps = " + std::to_string(costs.to_slow_gbps) +
                           " GB/s and copies in at to_fast_gbps = " + std::to_string(costs.to_fast_gbps) +
                           " GB/s; both must be finite and > 0");
  }
  if (costs.copy_lanes == 0) {
    throw invalid_argument(at + ": copy_lanes is 0; copies go on at least one lane (the mover's threads)");
  }
}

CACHEDARRAYS_INLINE TierCosts TierCosts::from_model(const Program& program, const KernelTimeModel& model,
                                                    const emulation::Bandwidth& fast,
                                                    const emulation::Bandwidth& slow) {
  if (!(fast.read_gbps > 0 && fast.write_gbps > 0 && slow.read_gbps > 0 && slow.write_gbps > 0)) {
    throw invalid_argument("TierCosts::from_model: every bandwidth must be > 0 GB/s");
  }
  TierCosts costs;
  const CopyChannels channels({{"fast", fast.read_gbps, fast.write_gbps}, {"slow", slow.read_gbps, slow.write_gbps}},
                              1);
  costs.to_slow_gbps = channels.gbps(CopyChannels::fast, CopyChannels::slow);
  costs.to_fast_gbps = channels.gbps(CopyChannels::slow, CopyChannels::fast);
  const auto gbps = [](const emulation::Bandwidth& tier, Access access) {
    return access == Access::read ? tier.read_gbps : tier.write_gbps;
  };
  for (const ProgramKernel& k : program.kernels()) {
    std::vector<ArgTraffic> args;
    for (const ProgramArg& a : k.args) args.push_back({a.bytes, a.access, gbps(fast, a.access)});
    const double all_fast = model.seconds(k.name, args);
    costs.fast_seconds.push_back(all_fast);
    std::vector<double> penalty;
    for (std::size_t j = 0; j < args.size(); ++j) {
      args[j].gbps = gbps(slow, k.args[j].access);
      penalty.push_back(std::max(0.0, model.seconds(k.name, args) - all_fast));
      args[j].gbps = gbps(fast, k.args[j].access);
    }
    costs.slow_penalty.push_back(std::move(penalty));
  }
  return costs;
}

}  // namespace cachedarrays::plan
