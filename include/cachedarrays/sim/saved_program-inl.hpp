// Implementation of saved_program.hpp (header-only mode includes it from there;
// the compiled library builds it in src/sim/sim.cpp).
#pragma once

#include "cachedarrays/config.hpp"
#include "cachedarrays/sim/saved_program.hpp"

#include "cachedarrays/error.hpp"
#include "cachedarrays/plan/program/online_profile.hpp"
#include "cachedarrays/sim/capacity_plan.hpp"

namespace cachedarrays {

CACHEDARRAYS_INLINE SavedProgram saved_program(const plan::Program& program, std::uint32_t steady_iterations) {
  if (steady_iterations == 0) {
    throw invalid_argument("cachedarrays: saved_program: steady_iterations is 0; give 1 or more");
  }
  SavedProgram s;
  s.tiers = program.tiers();
  s.unrepeatable = program.unrepeatable();
  // The replay names each kernel by the key its profile is under.
  const plan::Program keyed = program.profiles() != nullptr ? plan::profile_keyed(program) : program;
  if (const plan::KernelProfiles* profiles = program.profiles()) s.profiles = *profiles;
  s.trace = keyed.to_trace(s.unrepeatable ? 1 : steady_iterations);
  s.footprint = replayed_footprint(s.trace);
  s.program = plan::Program::from_trace(s.trace, 1);
  return s;
}

CACHEDARRAYS_INLINE std::optional<std::pair<DeviceModel, DeviceModel>> tier_models(
    const std::vector<plan::ProgramTier>& tiers) {
  if (tiers.size() < 2 || !tiers.front().bandwidths_known() || !tiers.back().bandwidths_known()) return std::nullopt;
  const plan::ProgramTier& fast = tiers.front();
  const plan::ProgramTier& slow = tiers.back();
  return std::pair{DeviceModel{fast.name, fast.read_gbps, fast.write_gbps},
                   DeviceModel{slow.name, slow.read_gbps, slow.write_gbps}};
}

}  // namespace cachedarrays
