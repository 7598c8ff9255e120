// Implementation of policy_descriptor.hpp (header-only mode includes it from
// there; the compiled library from src/policy/policy.cpp).
#pragma once

#include "cachedarrays/config.hpp"
#include "cachedarrays/policy/policy_descriptor.hpp"

#include <utility>

#include "cachedarrays/error.hpp"

namespace cachedarrays::policy {

CACHEDARRAYS_INLINE PolicyDescriptor::PolicyDescriptor(PolicyFacts facts) : facts_(std::move(facts)) {
  if (facts_.name.empty()) throw invalid_argument("cachedarrays: a policy needs a non-empty name");
  if (!facts_.factory && !facts_.memory_mode) {
    throw invalid_argument("cachedarrays: policy '" + facts_.name + "' needs a factory");
  }
}

CACHEDARRAYS_INLINE PolicyOptions PolicyDescriptor::merged(const PolicyOptions& options) const {
  PolicyOptions o = facts_.options;
  if (options.autoswap_score) o.autoswap_score = options.autoswap_score;
  if (options.offsets) o.offsets = options.offsets;
  if (options.lookahead) o.lookahead = options.lookahead;
  return o;
}

CACHEDARRAYS_INLINE bool PolicyDescriptor::needs_program(const PolicyOptions& options) const {
  if (facts_.needs_program || plans_ahead()) return true;
  // An offset plan is made from the program.
  const std::optional<plan::OffsetPlanner> offsets = merged(options).offsets;
  return facts_.takes_offset_planner && offsets && *offsets != plan::OffsetPlanner::online;
}

CACHEDARRAYS_INLINE std::optional<AutotmPolicyOptions> PolicyDescriptor::planned_options(
    const PolicyOptions& options) const {
  if (!facts_.planned) return std::nullopt;
  return facts_.planned(merged(options));
}

CACHEDARRAYS_INLINE std::unique_ptr<Policy> PolicyDescriptor::make(const PolicyOptions& options) const {
  if (!facts_.factory) {
    throw invalid_argument("cachedarrays: '" + facts_.name + "' is the hardware's 2LM memory mode, not a policy" +
                           (facts_.modeled_only
                                ? std::string("; it is modeled only (ca::simulate_2lm)")
                                : std::string("; model it (ca::simulate_2lm) or run all-fast on one memory-mode "
                                              "device (emulation::memory_mode)")));
  }
  return facts_.factory(merged(options));
}

}  // namespace cachedarrays::policy
