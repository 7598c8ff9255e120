// Implementation of candidate_model.hpp (header-only mode includes it from
// there; the compiled library from src/sim/sim.cpp).
#pragma once

#include "cachedarrays/config.hpp"
#include "cachedarrays/sim/candidate_model.hpp"

#include <exception>
#include <memory>
#include <tuple>

#include "cachedarrays/manager/emulation.hpp"
#include "cachedarrays/plan/program/online_profile.hpp"
#include "cachedarrays/sim/capacity_plan.hpp"
#include "cachedarrays/sim/saved_program.hpp"

namespace cachedarrays {

CACHEDARRAYS_INLINE std::vector<std::optional<double>> model_policies(
    const plan::Program& program, const std::vector<std::string>& policies, std::uint64_t fast_bytes,
    double plan_seconds, const std::function<void(const std::string&, const std::string&)>& on_error) {
  std::vector<std::optional<double>> seconds(policies.size());
  const SavedProgram saved = saved_program(program);
  if (saved.footprint == 0) return seconds;
  CapacityPlanOptions options;
  if (const auto tiers = tier_models(saved.tiers)) {
    std::tie(options.fast, options.slow) = *tiers;
  } else {
    // Tiers of unknown speed (a real tier, not emulated): the published figures.
    const emulation::Bandwidth ddr4 = emulation::published::ddr4_six_channel;
    const emulation::Bandwidth optane = emulation::published::optane_six_dimms;
    options.fast = {"dram", ddr4.read_gbps, ddr4.write_gbps};
    options.slow = {"optane", optane.read_gbps, optane.write_gbps};
  }
  const std::shared_ptr<const plan::KernelTimeModel> time =
      saved.profiles ? plan::online_time_model(*saved.profiles, {options.fast.read_gbps, options.fast.write_gbps},
                                               {options.slow.read_gbps, options.slow.write_gbps})
                     : std::make_shared<const plan::MemoryBound>();
  options.kernel_time = time.get();
  options.plan_seconds = plan_seconds;
  const double fraction = static_cast<double>(fast_bytes) / static_cast<double>(saved.footprint);
  for (std::size_t i = 0; i < policies.size(); ++i) {
    try {
      seconds[i] = model_point(saved.trace, saved.program, saved.footprint, policies[i], fraction, options).seconds;
    } catch (const std::exception& e) {
      if (on_error) on_error(policies[i], e.what());
    }
  }
  return seconds;
}

CACHEDARRAYS_INLINE policy::CandidateModel replay_candidate_model(double plan_seconds) {
  return [plan_seconds](const plan::Program& program, const std::vector<std::string>& candidates,
                        std::uint64_t fast_bytes) {
    return model_policies(program, candidates, fast_bytes, plan_seconds);
  };
}

}  // namespace cachedarrays
