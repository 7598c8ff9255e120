// The model the auto policy ranks its candidates with (policy/auto_policy.hpp):
// a recorded program replayed under each candidate at the running fast
// tier, on the tiers it ran on (plan::Program::tiers; the published DDR4 and
// Optane figures when it carries none), its kernels priced by their online
// profiles. bench/app_policies models its rows through the same function,
// so the ranking auto acts on is the one the benchmark checks against
// measurement.
#pragma once

#include "cachedarrays/config.hpp"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "cachedarrays/plan/program/program.hpp"
#include "cachedarrays/policy/auto_policy.hpp"

namespace cachedarrays {

/// Modeled seconds of one steady iteration of `program` under each of
/// `policies` with a fast tier of `fast_bytes`, in their order: the program
/// replayed (sim/saved_program.hpp) on the tiers it ran on, else (a tier of
/// unknown bandwidth) on the published six-channel DDR4 and Optane figures; each planned policy's plan bounded by
/// `plan_seconds` (0: its own limit). nullopt for a policy that cannot be
/// modeled there (out of memory, a replay error), after `on_error` heard
/// the policy and why. Throws invalid_argument for a program that cannot be
/// replayed.
[[nodiscard]] std::vector<std::optional<double>> model_policies(
    const plan::Program& program, const std::vector<std::string>& policies, std::uint64_t fast_bytes,
    double plan_seconds, const std::function<void(const std::string&, const std::string&)>& on_error = {});

/// model_policies as the auto policy's CandidateModel, each planned
/// policy's plan bounded by `plan_seconds`.
[[nodiscard]] policy::CandidateModel replay_candidate_model(double plan_seconds = 1.0);

/// The time limit of each planned candidate's plan in the model the
/// umbrella header installs (policy::set_default_candidate_model).
inline constexpr double default_candidate_plan_seconds = 1.0;

}  // namespace cachedarrays

#ifdef CACHEDARRAYS_HEADER_ONLY
#include "cachedarrays/sim/candidate_model-inl.hpp"
#endif
