// What a policy is, apart from its code: its name, a line that says what it
// does and where its paper describes it, what it needs to run (a program,
// the mover), which options its factory takes, and whether it runs at all or
// stands for the hardware's 2LM memory mode. A policy's name is decoded once,
// when the registry (registry.hpp) looks its descriptor up; the benchmarks,
// the trainer, the simulator and the tools ask the descriptor instead of
// comparing names.
//
//   const ca::policy::PolicyDescriptor d = ca::policy::Registry::builtin().describe("ca-lma");
//   ca::Runtime rt{devices, d.make({.lookahead = ca::policy::Lookahead{12, 0.5}})};
//   if (d.needs_program()) rt.set_program(program);
#pragma once

#include "cachedarrays/config.hpp"

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "cachedarrays/plan/offsets/offset_planner.hpp"
#include "cachedarrays/plan/schedule/autoswap.hpp"
#include "cachedarrays/policy/autotm_policy.hpp"
#include "cachedarrays/policy/cachedarrays_policy.hpp"
#include "cachedarrays/policy/policy.hpp"

namespace cachedarrays::policy {

/// The options a policy's factory takes: what its name spells
/// ("autoswap:bo", "ca-lm+smartpool") and what a caller adds. Unset fields
/// leave the policy's own choice; a policy ignores the options it has no use
/// for.
struct PolicyOptions {
  /// AutoSwap's priority score ("autoswap:SCORE").
  std::optional<plan::AutoswapScore> autoswap_score{};
  /// An offset planner ("+best-fit", "+smartpool", "+mip"): the objects an
  /// iteration creates go to the offsets it plans (the CachedArrays modes
  /// with L and M).
  std::optional<plan::OffsetPlanner> offsets{};
  /// How far the lookahead modes look ahead (unset: Lookahead{}).
  std::optional<Lookahead> lookahead{};
};

/// The hardware's 2LM memory mode, which a descriptor may stand for instead
/// of a policy: DRAM is a cache of the slow tier that software cannot
/// place in (emulation::memory_mode runs it, sim/simulate_2lm.hpp models it).
struct MemoryMode {
  /// Retired objects are freed at once (2LM:M); else at the next collect,
  /// as a garbage collector frees them (2LM:∅).
  bool retire_frees_at_once = false;
};

/// The facts a PolicyDescriptor is made of (see its accessors for each).
struct PolicyFacts {
  /// Makes a policy from the options its name spells, each one a caller
  /// gives replacing the spelled one.
  using Factory = std::function<std::unique_ptr<Policy>(const PolicyOptions&)>;
  /// The options of AutotmPolicy for a policy that plans ahead, the planner
  /// chosen and nothing else set.
  using PlannedFactory = std::function<AutotmPolicyOptions(const PolicyOptions&)>;

  std::string name{};     ///< the registry name, or the spelling looked up ("ca-pl")
  std::string summary{};  ///< one line: what it does
  /// Where its paper describes it: the paper's number among the project's
  /// papers and the section ("003 §IV"); empty for a policy of no paper.
  std::string section{};
  PolicyOptions options{};                  ///< what the name spells
  Factory factory{};                        ///< null only for a memory mode, which is not a policy
  PlannedFactory planned{};                 ///< set for the policies that plan ahead (AutotmPolicy)
  bool needs_program = false;               ///< plans from the program even without an offset plan
  bool takes_lookahead = false;             ///< PolicyOptions::lookahead applies: the A modes
  bool takes_offset_planner = false;        ///< PolicyOptions::offsets applies: the modes with L and M
  bool uses_mover = false;                  ///< moves objects by the asynchronous mover
  bool baseline = false;                    ///< the all-fast reference every slowdown is taken against
  std::optional<MemoryMode> memory_mode{};  ///< set: stands for the hardware's memory mode
  bool modeled_only = false;                ///< a memory mode no emulation runs, only the model
  /// Picks among the other policies by timing them on the running program
  /// (auto): only a run decides it, so no model replays it.
  bool measures_candidates = false;
};

/// A policy's descriptor: its name, summary and paper section, what it needs
/// and how it runs, and a factory. Registry::describe() gives the built-in
/// ones and any spelling the registry parses.
class PolicyDescriptor {
 public:
  /// A descriptor of `facts`. Throws invalid_argument for an empty name, or
  /// no factory where one is needed (everything but a memory mode).
  explicit PolicyDescriptor(PolicyFacts facts);

  /// The registry name, or the spelling looked up.
  [[nodiscard]] const std::string& name() const noexcept { return facts_.name; }
  /// One line: what the policy does.
  [[nodiscard]] const std::string& summary() const noexcept { return facts_.summary; }
  /// The paper and section that describe it ("003 §IV"); empty when none does.
  [[nodiscard]] const std::string& section() const noexcept { return facts_.section; }
  /// The options its name spells (autoswap:bo's score, ca-lm+mip's planner).
  [[nodiscard]] const PolicyOptions& options() const noexcept { return facts_.options; }

  /// Whether it plans from the program of the iteration and should be given
  /// one (Runtime::set_program): the policies that plan ahead, the lookahead
  /// modes, and any policy with an offset plan (spelled, or in `options`).
  [[nodiscard]] bool needs_program(const PolicyOptions& options = {}) const;
  /// Whether it plans the whole iteration ahead (AutoTM, AutoSwap, ReDL):
  /// planned_options() gives its options.
  [[nodiscard]] bool plans_ahead() const noexcept { return static_cast<bool>(facts_.planned); }
  /// Whether PolicyOptions::lookahead changes it (the A modes).
  [[nodiscard]] bool takes_lookahead() const noexcept { return facts_.takes_lookahead; }
  /// Whether PolicyOptions::offsets applies (the CachedArrays modes with L and M).
  [[nodiscard]] bool takes_offset_planner() const noexcept { return facts_.takes_offset_planner; }
  /// Whether it moves objects by the asynchronous mover.
  [[nodiscard]] bool uses_mover() const noexcept { return facts_.uses_mover; }
  /// Whether it is the all-fast reference: every object in the fastest tier,
  /// so it fits only a fast tier of the whole footprint.
  [[nodiscard]] bool baseline() const noexcept { return facts_.baseline; }
  /// Set when it stands for the hardware's memory mode instead of a policy:
  /// run it on a memory-mode device (emulation::memory_mode) with every
  /// object on that device, or model it (simulate_2lm).
  [[nodiscard]] const std::optional<MemoryMode>& memory_mode() const noexcept { return facts_.memory_mode; }
  /// Whether only a model runs it (a memory mode the emulation cannot run).
  [[nodiscard]] bool modeled_only() const noexcept { return facts_.modeled_only; }
  /// Whether it picks among the other policies by timing them on the running
  /// program (auto): a model cannot replay it; model its candidates instead.
  [[nodiscard]] bool measures_candidates() const noexcept { return facts_.measures_candidates; }

  /// The options of AutotmPolicy for a policy that plans ahead, the planner
  /// chosen (from its spelled options, each one in `options` replacing its
  /// own) and nothing else set: the caller adds a time model, bandwidths, a
  /// log. nullopt for any other policy.
  [[nodiscard]] std::optional<AutotmPolicyOptions> planned_options(const PolicyOptions& options = {}) const;
  /// A new policy from its spelled options, each one in `options` replacing
  /// its own. Throws invalid_argument for a memory mode (no software policy
  /// places objects there) and what the policy's constructor throws.
  [[nodiscard]] std::unique_ptr<Policy> make(const PolicyOptions& options = {}) const;

 private:
  [[nodiscard]] PolicyOptions merged(const PolicyOptions& options) const;

  PolicyFacts facts_;
};

}  // namespace cachedarrays::policy

#ifdef CACHEDARRAYS_HEADER_ONLY
#include "cachedarrays/policy/policy_descriptor-inl.hpp"
#endif
