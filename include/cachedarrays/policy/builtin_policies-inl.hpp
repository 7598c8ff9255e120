// Implementation of builtin_policies.hpp (header-only mode includes it from
// there; the compiled library from src/policy/policy.cpp).
#pragma once

#include "cachedarrays/config.hpp"
#include "cachedarrays/policy/builtin_policies.hpp"

#include <memory>
#include <string_view>
#include <utility>

#include "cachedarrays/plan/schedule/autoswap.hpp"
#include "cachedarrays/policy/auto_policy.hpp"
#include "cachedarrays/policy/autoswap_policy.hpp"
#include "cachedarrays/policy/autotm_policy.hpp"
#include "cachedarrays/policy/cachedarrays_policy.hpp"
#include "cachedarrays/policy/first_touch.hpp"
#include "cachedarrays/policy/redl_policy.hpp"
#include "cachedarrays/policy/single_tier.hpp"

namespace cachedarrays::policy {

namespace detail {

// A CachedArrays mode under `name` ("planned" is ca-lm+best-fit): its
// offset planner is an option of its spelling, which a caller may replace.
CACHEDARRAYS_INLINE PolicyDescriptor mode_descriptor(std::string name, const Mode& mode, std::string summary,
                                                     std::string section) {
  PolicyFacts f;
  f.name = std::move(name);
  f.summary = summary.empty() ? "the CachedArrays mode " + mode.name() : std::move(summary);
  f.section = std::move(section);
  if (mode.offsets != plan::OffsetPlanner::online) f.options.offsets = mode.offsets;
  Mode unplanned = mode;
  unplanned.offsets = plan::OffsetPlanner::online;
  f.factory = [unplanned](const PolicyOptions& o) {
    Mode m = unplanned;
    m.offsets = o.offsets.value_or(plan::OffsetPlanner::online);
    return std::make_unique<CachedArraysPolicy>(m, o.lookahead.value_or(Lookahead{}));
  };
  f.needs_program = mode.async_lookahead;
  f.takes_lookahead = mode.async_lookahead;
  f.takes_offset_planner = mode.local_allocation && mode.memory_optimisations && !mode.hardware_cache;
  f.uses_mover = mode.async_lookahead;
  return PolicyDescriptor(std::move(f));
}

CACHEDARRAYS_INLINE PolicyDescriptor single_tier_descriptor(SingleTier::Tier tier, std::string name,
                                                            std::string summary) {
  PolicyFacts f;
  f.name = std::move(name);
  f.summary = std::move(summary);
  f.section = "003 §V";
  f.factory = [tier](const PolicyOptions&) { return std::make_unique<SingleTier>(tier); };
  f.baseline = tier == SingleTier::Tier::fastest;
  return PolicyDescriptor(std::move(f));
}

CACHEDARRAYS_INLINE PolicyDescriptor memory_mode_descriptor(bool retire_frees_at_once) {
  PolicyFacts f;
  f.name = retire_frees_at_once ? "2lm:m" : "2lm";
  f.summary = retire_frees_at_once
                  ? "2LM:M — the hardware's memory mode, DRAM a cache of the slow tier; retired tensors freed at "
                    "once (emulated and modeled)"
                  : "2LM:∅ — the hardware's memory mode; retired tensors freed at the next collect, as a garbage "
                    "collector frees them (modeled only)";
  f.section = "003 §IV-A";
  f.memory_mode = MemoryMode{retire_frees_at_once};
  // The emulation frees retired objects at once, as the runtime does.
  f.modeled_only = !retire_frees_at_once;
  return PolicyDescriptor(std::move(f));
}

// A policy that plans ahead: AutotmPolicy following the plan of
// `planned`'s options.
CACHEDARRAYS_INLINE PolicyDescriptor planned_descriptor(PolicyFacts f, PolicyFacts::PlannedFactory planned) {
  f.planned = std::move(planned);
  f.factory = [planned = f.planned](const PolicyOptions& o) { return std::make_unique<AutotmPolicy>(planned(o)); };
  f.needs_program = true;
  return PolicyDescriptor(std::move(f));
}

CACHEDARRAYS_INLINE PolicyDescriptor autotm_descriptor(std::string name, std::string summary, std::string section) {
  const plan::AutotmFormulation formulation = autotm_formulation(name).value();
  PolicyFacts f{.name = std::move(name), .summary = std::move(summary), .section = std::move(section)};
  f.uses_mover = formulation == plan::AutotmFormulation::asynchronous;
  return planned_descriptor(std::move(f), [formulation](const PolicyOptions&) {
    AutotmPolicyOptions options;
    options.solver.formulation = formulation;
    return options;
  });
}

// "autoswap:SCORE": the score is an option its name spells.
CACHEDARRAYS_INLINE PolicyDescriptor autoswap_descriptor(std::string name, std::string summary) {
  constexpr std::string_view prefix = "autoswap:";
  const plan::AutoswapScore score = plan::parse_autoswap_score(std::string_view(name).substr(prefix.size()));
  PolicyFacts f{.name = std::move(name),
                .summary = std::move(summary),
                .section = score == plan::AutoswapScore::bo ? "002 §IV-C" : "002 §IV-B"};
  f.options.autoswap_score = score;
  f.uses_mover = true;
  return planned_descriptor(std::move(f), [](const PolicyOptions& o) {
    AutotmPolicyOptions options;
    options.planner = autoswap_planner(o.autoswap_score.value());
    return options;
  });
}

CACHEDARRAYS_INLINE PolicyDescriptor redl_descriptor(std::string summary) {
  PolicyFacts f{.name = "redl", .summary = std::move(summary), .section = "004 §III"};
  f.uses_mover = true;
  return planned_descriptor(std::move(f), [](const PolicyOptions&) {
    AutotmPolicyOptions options;
    options.planner = redl_planner("redl");
    return options;
  });
}

// The baselines, the CachedArrays modes and the memory modes, in the
// capacity planner's order.
CACHEDARRAYS_INLINE void add_placement_descriptors(std::vector<PolicyDescriptor>& out) {
  PolicyFacts chooser{.name = "auto",
                      .summary =
                          "picks the policy: the built-in policies ranked by a model of the recorded program, "
                          "the best few and leaving data in place tried for an iteration or two each, the "
                          "fastest kept (CA:LM until the program is known)",
                      .section = ""};
  chooser.factory = [](const PolicyOptions&) {
    AutoPolicyOptions options;
    options.model = default_candidate_model();
    return std::make_unique<AutoPolicy>(std::move(options));
  };
  chooser.needs_program = true;
  chooser.uses_mover = true;
  chooser.measures_candidates = true;
  out.emplace_back(std::move(chooser));
  out.push_back(
      single_tier_descriptor(SingleTier::Tier::fastest, "all-fast", "every object on the fastest device; never moves"));
  out.push_back(
      single_tier_descriptor(SingleTier::Tier::slowest, "all-slow", "every object on the slowest device; never moves"));
  out.push_back(PolicyDescriptor(
      PolicyFacts{.name = "first-touch",
                  .summary = "fast device until full, then slower ones; never moves (NUMA first touch)",
                  .section = "000 §5.3",
                  .factory = [](const PolicyOptions&) { return std::make_unique<FirstTouch>(); }}));
  out.push_back(cachedarrays_descriptor(
      "hw-cache",
      "2LM-like object cache — created in slow memory, a fast copy filled on every use and written "
      "back when dirty; no archive hints; retire frees at once",
      ""));
  out.push_back(memory_mode_descriptor(true));
  out.push_back(cachedarrays_descriptor(
      "ca", "CA:∅ — created in slow memory, copied in before first write; retire waits for collect()"));
  out.push_back(cachedarrays_descriptor("ca-l", "CA:L — local allocation in fast memory; retire waits for collect()"));
  out.push_back(cachedarrays_descriptor("ca-lm", "CA:LM — local allocation, retire frees at once"));
  out.push_back(cachedarrays_descriptor("ca-lmp", "CA:LMP — CA:LM plus prefetch on will_read"));
  out.push_back(cachedarrays_descriptor(
      "ca-lma",
      "CA:LMA — CA:LM plus asynchronous lookahead in the program: prefetches ahead of use and writes "
      "archived objects back in the background (needs a program)",
      ""));
  out.push_back(cachedarrays_descriptor("ca-lmpa", "CA:LMPA — CA:LMP plus asynchronous lookahead", ""));
  // Any L and M mode + a planner (ca-lmpa+smartpool, ...) is described by
  // cachedarrays_descriptor() when looked up.
  out.push_back(mode_descriptor("planned", Mode::parse("ca-lm+best-fit"),
                                "CA:LM with the objects of each iteration at offsets planned by best-fit offset "
                                "lines (= ca-lm+best-fit; +smartpool and +mip plan with the others)",
                                "001 §3.2"));
  out.push_back(mode_descriptor("planned-a", Mode::parse("ca-lma+best-fit"),
                                "CA:LMA with planned offsets (= ca-lma+best-fit)", "001 §3.2"));
  out.push_back(memory_mode_descriptor(false));
}

// Planned ahead (AutoTM, AutoTM; AutoSwap, SmartPool/AutoSwap; ReDL, ReDL):
// the program planned once, the plan executed at kernel boundaries.
CACHEDARRAYS_INLINE void add_planned_descriptors(std::vector<PolicyDescriptor>& out) {
  out.push_back(autotm_descriptor("autotm-static",
                                  "AutoTM static — each object placed in fast or slow memory once, by AutoTM's ILP "
                                  "over the program (needs a program; Cbc)",
                                  "000 §3"));
  out.push_back(
      autotm_descriptor("autotm-sync",
                        "AutoTM synchronous — AutoTM's ILP also moves objects just before and after the kernels that "
                        "use them",
                        "000 §3, §4.3"));
  out.push_back(autotm_descriptor("autotm-async",
                                  "AutoTM asynchronous — the synchronous moves and moves by the mover beside other "
                                  "kernels (paper section 7)",
                                  "000 §7.1"));
  out.push_back(autoswap_descriptor("autoswap:doa",
                                    "AutoSwap — swaps out and back in by the mover, between uses picked by the "
                                    "duration of absence (DOA), until the memory load fits the fast tier (needs a "
                                    "program)"));
  out.push_back(
      autoswap_descriptor("autoswap:aoa", "AutoSwap, swaps picked by the area of absence (AOA: DOA times size)"));
  out.push_back(autoswap_descriptor(
      "autoswap:wdoa",
      "AutoSwap, swaps picked by the weighted duration of absence (WDOA: the area under the memory load curve)"));
  out.push_back(autoswap_descriptor("autoswap:swdoa",
                                    "AutoSwap, swaps picked by the submodular WDOA (SWDOA: rescored after each pick)"));
  out.push_back(autoswap_descriptor("autoswap:bo",
                                    "AutoSwap, swaps picked by a weighted sum of the four scores, the weights found "
                                    "by Bayesian optimisation of the modeled overhead (30 plans)"));
  out.push_back(redl_descriptor(
      "ReDL — liveness-based migration: short-lived objects in a reserved fast region, the next period's objects "
      "copied in beside the current one, late reads served from the slow tier (DSMA; needs a program)"));
}

}  // namespace detail

CACHEDARRAYS_INLINE PolicyDescriptor cachedarrays_descriptor(const std::string& name, std::string summary,
                                                             std::string section) {
  return detail::mode_descriptor(name, Mode::parse(name), std::move(summary), std::move(section));
}

CACHEDARRAYS_INLINE std::vector<PolicyDescriptor> builtin_descriptors() {
  std::vector<PolicyDescriptor> out;
  detail::add_placement_descriptors(out);
  detail::add_planned_descriptors(out);
  return out;
}

}  // namespace cachedarrays::policy
