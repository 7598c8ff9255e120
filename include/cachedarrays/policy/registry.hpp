// Creates policies by name, for command lines and benchmarks. A Registry is
// an ordinary object (no process-wide singleton): start from the built-in
// policies and add your own.
//
//   auto registry = ca::policy::Registry::builtin();
//   registry.add("my-policy", "what it does", [] { return std::make_unique<MyPolicy>(); });
//   ca::Runtime rt{devices, registry.make(name)};
#pragma once

#include "cachedarrays/config.hpp"

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cachedarrays/policy/autotm_policy.hpp"
#include "cachedarrays/policy/policy.hpp"

namespace cachedarrays::policy {

/// Creates policies by name, for command lines and benchmarks: an ordinary
/// object (no process-wide singleton); start from builtin() and add your own.
class Registry {
 public:
  /// Makes a new policy each time it is called.
  using Factory = std::function<std::unique_ptr<Policy>()>;

  /// first-touch, all-fast, all-slow, the CachedArrays modes ca, ca-l,
  /// ca-lm, ca-lmp, ... (other letter combinations such as ca-m are accepted
  /// by make() too), planned, planned-a and planned_policies().
  [[nodiscard]] static Registry builtin();

  /// Adds a policy; throws invalid_argument if the name is taken or empty,
  /// or `factory` is empty.
  void add(std::string name, std::string description, Factory factory);
  /// A new policy by name; throws invalid_argument listing the valid names.
  [[nodiscard]] std::unique_ptr<Policy> make(std::string_view name) const;
  /// Whether `name` is registered (a mode that only make() parses is not).
  [[nodiscard]] bool contains(std::string_view name) const;
  /// Registered names, in alphabetical order.
  [[nodiscard]] std::vector<std::string> names() const;
  /// The description `name` was registered with; empty for an unknown name.
  [[nodiscard]] std::string description(std::string_view name) const;

 private:
  struct Entry {
    std::string description;
    Factory factory;
  };
  std::map<std::string, Entry, std::less<>> entries_;
};

// The policies that follow a plan of the program made ahead, all executed by
// AutotmPolicy: AutoTM's formulations (autotm-static, autotm-sync,
// autotm-async), AutoSwap's scores (autoswap:doa, :aoa, :wdoa, :swdoa, :bo)
// and ReDL (redl).

/// The options of a planned policy (one AutotmPolicy runs: AutoTM's
/// formulations, AutoSwap's scores, ReDL) by name, the planner chosen and
/// nothing else set (the caller adds a time model, bandwidths, a log);
/// nullopt for any other name.
[[nodiscard]] std::optional<AutotmPolicyOptions> planned_policy_options(std::string_view name);
/// The planned policies' names and descriptions, as builtin() registers them.
[[nodiscard]] std::vector<std::pair<std::string, std::string>> planned_policies();

/// Whether the built-in policy `name` plans from the program of the
/// iteration and should be given one (Runtime::set_program): the planned
/// policies, the lookahead modes (ca-lma, ...) and the offset-planned
/// ones (planned, planned-a). False for names the built-in registry does not
/// know.
[[nodiscard]] bool needs_program(std::string_view name);

}  // namespace cachedarrays::policy

#ifdef CACHEDARRAYS_HEADER_ONLY
#include "cachedarrays/policy/registry-inl.hpp"
#endif
