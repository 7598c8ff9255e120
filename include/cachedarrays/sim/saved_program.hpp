// A program a runtime recorded and saved (plan::Program::save), made ready for
// the replay (sim/replay.hpp, sim/capacity_plan.hpp): its trace, repeated for
// the replays' steady state when the iteration can repeat; the program the
// planned policies get; its footprint; its kernels' online profiles, keyed as
// the replay names the kernels; and the tiers it ran on as the replay's
// device models. cachedarrays-plan --program and bench/app_policies model a
// saved program through it, so both model it the same way.
#pragma once

#include "cachedarrays/config.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cachedarrays/manager/trace.hpp"
#include "cachedarrays/plan/program/copy_channels.hpp"
#include "cachedarrays/plan/program/kernel_profile.hpp"
#include "cachedarrays/plan/program/program.hpp"

namespace cachedarrays {

/// A saved program ready to replay.
struct SavedProgram {
  /// The iteration as the replay runs it: `steady_iterations` repeats when it
  /// can repeat, once from a cold start otherwise.
  Trace trace;
  /// The program of the trace's first iteration: what the planned policies
  /// and the lookahead are given (numbered as the trace's objects).
  plan::Program program;
  std::uint64_t footprint = 0;  ///< replayed_footprint of the trace
  /// The online profiles, keyed by plan::profile_key as the trace names its
  /// kernels; empty when the program has none.
  std::optional<plan::KernelProfiles> profiles;
  /// The tiers it ran on (plan::Program::tiers); empty when it carries none.
  std::vector<plan::ProgramTier> tiers;
  /// Why the iteration cannot repeat (plan::Program::unrepeatable), when it
  /// cannot: it was replayed once, from a cold start.
  std::optional<std::string> unrepeatable;
};

/// Iterations a saved program is replayed for when it can repeat: the first
/// starts cold, the second from where the first left things, and the last
/// one's copies made ahead meet no kernel, so the steady window
/// (sim/replay.hpp) lies between.
inline constexpr std::uint32_t steady_replay_iterations = 5;

/// `program` made ready to replay, `steady_iterations` (>= 1) times when it
/// can repeat. Throws invalid_argument as plan::Program::to_trace does.
[[nodiscard]] SavedProgram saved_program(const plan::Program& program,
                                         std::uint32_t steady_iterations = steady_replay_iterations);

/// The fast tier (the first) and the slow tier (the last) of `tiers` as the
/// replay's device models, when both bandwidths of both are known
/// (plan::ProgramTier::bandwidths_known); nullopt otherwise.
[[nodiscard]] std::optional<std::pair<DeviceModel, DeviceModel>> tier_models(
    const std::vector<plan::ProgramTier>& tiers);

}  // namespace cachedarrays

#ifdef CACHEDARRAYS_HEADER_ONLY
#include "cachedarrays/sim/saved_program-inl.hpp"
#endif
