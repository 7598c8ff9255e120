// Implementation of registry.hpp (header-only mode includes it from there; the
// compiled library from src/policy/policy.cpp).
#pragma once

#include "cachedarrays/config.hpp"
#include "cachedarrays/policy/registry.hpp"

#include "cachedarrays/policy/autoswap_policy.hpp"
#include "cachedarrays/policy/autotm_policy.hpp"
#include "cachedarrays/policy/cachedarrays_policy.hpp"
#include "cachedarrays/policy/first_touch.hpp"
#include "cachedarrays/policy/redl_policy.hpp"
#include "cachedarrays/policy/single_tier.hpp"

#include <utility>

namespace cachedarrays::policy {

CACHEDARRAYS_INLINE Registry Registry::builtin() {
  Registry r;
  r.add("first-touch", "fast device until full, then slower ones; never moves (NUMA first touch)",
        [] { return std::make_unique<FirstTouch>(); });
  r.add("all-fast", "every object on the fastest device; never moves",
        [] { return std::make_unique<SingleTier>(SingleTier::Tier::fastest); });
  r.add("all-slow", "every object on the slowest device; never moves",
        [] { return std::make_unique<SingleTier>(SingleTier::Tier::slowest); });
  const std::pair<const char*, const char*> modes[] = {
      {"ca", "CA:∅ — created in slow memory, copied in before first write; retire waits for collect()"},
      {"ca-l", "CA:L — local allocation in fast memory; retire waits for collect()"},
      {"ca-lm", "CA:LM — local allocation, retire frees at once"},
      {"ca-lmp", "CA:LMP — CA:LM plus prefetch on will_read"},
      {"ca-lma", "CA:LMA — CA:LM plus asynchronous lookahead in the program: prefetches ahead of use and "
                 "writes archived objects back in the background (needs a program)"},
      {"ca-lmpa", "CA:LMPA — CA:LMP plus asynchronous lookahead"},
      {"hw-cache", "2LM-like object cache — created in slow memory, a fast copy filled on every use and written "
                   "back when dirty; no archive hints; retire frees at once"},
  };
  for (const auto& [name, description] : modes) {
    const Mode mode = Mode::parse(name);
    r.add(name, description, [mode] { return std::make_unique<CachedArraysPolicy>(mode); });
  }
  // The offset-planned family: any L and M mode + a planner (ca-lmpa+smartpool, ...) is made by make().
  r.add("planned", "CA:LM with the objects of each iteration at offsets planned by best-fit offset lines (= "
                   "ca-lm+best-fit; +smartpool and +mip plan with the others)",
        [] { return std::make_unique<CachedArraysPolicy>(Mode::parse("ca-lm+best-fit")); });
  r.add("planned-a", "CA:LMA with planned offsets (= ca-lma+best-fit)",
        [] { return std::make_unique<CachedArraysPolicy>(Mode::parse("ca-lma+best-fit")); });
  // Planned ahead (AutoTM, paper 000; AutoSwap, paper 002): the program
  // planned once, the plan executed at kernel boundaries.
  for (auto& [name, description] : planned_policies()) {
    r.add(name, std::move(description), [name = name] {
      return std::make_unique<AutotmPolicy>(*planned_policy_options(name));
    });
  }
  return r;
}

CACHEDARRAYS_INLINE std::optional<AutotmPolicyOptions> planned_policy_options(std::string_view name) {
  AutotmPolicyOptions options;
  if (const std::optional<plan::AutotmFormulation> formulation = autotm_formulation(name)) {
    options.solver.formulation = *formulation;
    return options;
  }
  if (std::optional<PlannerHook> planner = autoswap_planner(name)) {
    options.planner = std::move(planner);
    return options;
  }
  if (std::optional<PlannerHook> planner = redl_planner(name)) {
    options.planner = std::move(planner);
    return options;
  }
  return std::nullopt;
}

CACHEDARRAYS_INLINE std::vector<std::pair<std::string, std::string>> planned_policies() {
  return {
      {"autotm-static", "AutoTM static — each object placed in fast or slow memory once, by AutoTM's ILP over the "
                        "program (needs a program; Cbc)"},
      {"autotm-sync", "AutoTM synchronous — AutoTM's ILP also moves objects just before and after the kernels that "
                      "use them"},
      {"autotm-async", "AutoTM asynchronous — the synchronous moves and moves by the mover beside other kernels "
                       "(paper section 7)"},
      {"autoswap:doa", "AutoSwap — swaps out and back in by the mover, between uses picked by the duration of "
                       "absence (DOA), until the memory load fits the fast tier (needs a program)"},
      {"autoswap:aoa", "AutoSwap, swaps picked by the area of absence (AOA: DOA times size)"},
      {"autoswap:wdoa", "AutoSwap, swaps picked by the weighted duration of absence (WDOA: the area under the memory load curve)"},
      {"autoswap:swdoa", "AutoSwap, swaps picked by the submodular WDOA (SWDOA: rescored after each pick)"},
      {"autoswap:bo", "AutoSwap, swaps picked by a weighted sum of the four scores, the weights found by Bayesian "
                      "optimisation of the modeled overhead (30 plans)"},
      {"redl", "ReDL — liveness-based migration: short-lived objects in a reserved fast region, the next "
               "period's objects copied in beside the current one, late reads served from the slow tier (DSMA; "
               "needs a program)"},
  };
}

CACHEDARRAYS_INLINE void Registry::add(std::string name, std::string description, Factory factory) {
  if (name.empty()) throw invalid_argument("cachedarrays: a policy needs a non-empty name");
  if (!factory) throw invalid_argument("cachedarrays: policy '" + name + "' needs a factory");
  if (contains(name)) {
    throw invalid_argument("cachedarrays: a policy named '" + name + "' is already registered; pick another name");
  }
  entries_.emplace(std::move(name), Entry{std::move(description), std::move(factory)});
}

CACHEDARRAYS_INLINE bool Registry::contains(std::string_view name) const { return entries_.find(name) != entries_.end(); }

CACHEDARRAYS_INLINE std::unique_ptr<Policy> Registry::make(std::string_view name) const {
  if (auto it = entries_.find(name); it != entries_.end()) return it->second.factory();
  // Any other spelling of the CachedArrays switches (ca-m, ca-pl, ...), with
  // or without an offset planner (ca-lmp+smartpool).
  if (name.substr(0, 2) == "ca") {
    try {
      return std::make_unique<CachedArraysPolicy>(Mode::parse(name));
    } catch (const invalid_argument&) {
      // A mode that parses but cannot take a plan says why.
      if (name.find('+') != std::string_view::npos) throw;
    }
  }
  std::string valid;
  for (const auto& [known, entry] : entries_) valid += (valid.empty() ? "" : ", ") + known;
  throw invalid_argument("cachedarrays: unknown policy '" + std::string(name) + "'; valid policies: " + valid +
                         " (and any ca-<letters>[+best-fit|+smartpool|+mip])");
}

CACHEDARRAYS_INLINE std::vector<std::string> Registry::names() const {
  std::vector<std::string> names;
  for (const auto& [name, entry] : entries_) names.push_back(name);
  return names;
}

CACHEDARRAYS_INLINE std::string Registry::description(std::string_view name) const {
  auto it = entries_.find(name);
  return it == entries_.end() ? std::string{} : it->second.description;
}

CACHEDARRAYS_INLINE bool needs_program(std::string_view name) {
  if (planned_policy_options(name)) return true;
  const Registry registry = Registry::builtin();
  if (!registry.contains(name)) return false;
  // By the name the policy gives itself: "planned" is ca-lm+best-fit.
  const std::string mode = registry.make(name)->name();
  if (mode.rfind("ca", 0) != 0) return false;
  const Mode parsed = Mode::parse(mode);
  return parsed.async_lookahead || parsed.offsets != plan::OffsetPlanner::online;
}

}  // namespace cachedarrays::policy
