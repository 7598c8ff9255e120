// Creates policies by name, for command lines and benchmarks. A Registry is
// an ordinary object (no process-wide singleton): start from the built-in
// policies and add your own. Each name has a descriptor
// (policy_descriptor.hpp) that says what the policy needs and how it runs,
// so that no caller has to decode the name itself.
//
//   auto registry = ca::policy::Registry::builtin();
//   registry.add("my-policy", "what it does", [] { return std::make_unique<MyPolicy>(); });
//   ca::Runtime rt{devices, registry.make(name)};
//   if (registry.describe(name).needs_program()) rt.set_program(program);
#pragma once

#include "cachedarrays/config.hpp"

#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cachedarrays/policy/policy.hpp"
#include "cachedarrays/policy/policy_descriptor.hpp"

namespace cachedarrays::policy {

/// Creates policies by name, for command lines and benchmarks: an ordinary
/// object (no process-wide singleton); start from builtin() and add your own.
class Registry {
 public:
  /// Makes a new policy each time it is called.
  using Factory = std::function<std::unique_ptr<Policy>()>;

  /// The built-in descriptors (builtin_policies.hpp): first-touch, all-fast,
  /// all-slow, the CachedArrays modes ca, ca-l, ca-lm, ca-lmp, ... (other
  /// letter combinations such as ca-m, and +planner forms, are described by
  /// describe() too), planned, planned-a, the policies that plan ahead
  /// (autotm-*, autoswap:*, redl) and the 2LM memory modes 2lm and 2lm:m.
  [[nodiscard]] static Registry builtin();

  /// Adds a policy that needs nothing (no program, no mover); throws
  /// invalid_argument if the name is taken or empty, or `factory` is empty.
  void add(std::string name, std::string description, Factory factory);
  /// Adds a descriptor; throws invalid_argument if its name is taken.
  void add(PolicyDescriptor descriptor);

  /// The descriptor of `name`: a registered one, or one the registry parses
  /// (any CachedArrays mode, "ca-" and its letters, optionally followed by
  /// "+best-fit", "+smartpool" or "+mip"). Throws invalid_argument listing
  /// the valid names for any other, and Mode::parse's for a CachedArrays
  /// mode that cannot take the planner it names.
  [[nodiscard]] PolicyDescriptor describe(std::string_view name) const;
  /// describe(), nullopt instead of the exception.
  [[nodiscard]] std::optional<PolicyDescriptor> try_describe(std::string_view name) const;
  /// A new policy by name (describe(name).make()); throws invalid_argument
  /// listing the valid names, or for a memory mode, which is not a policy.
  [[nodiscard]] std::unique_ptr<Policy> make(std::string_view name) const;

  /// Whether `name` is registered, the memory modes included (a spelling
  /// only describe() parses is not).
  [[nodiscard]] bool contains(std::string_view name) const;
  /// The registered policies make() creates, in alphabetical order (not the
  /// memory modes: they are in descriptors()).
  [[nodiscard]] std::vector<std::string> names() const;
  /// Every registered descriptor, the memory modes included, in the order
  /// they were added.
  [[nodiscard]] const std::vector<PolicyDescriptor>& descriptors() const noexcept { return descriptors_; }
  /// The summary `name` was registered with; empty for an unknown name.
  [[nodiscard]] std::string description(std::string_view name) const;

 private:
  [[nodiscard]] const PolicyDescriptor* registered(std::string_view name) const;
  [[nodiscard]] std::string unknown_name_message(std::string_view name) const;

  std::vector<PolicyDescriptor> descriptors_;
  std::map<std::string, std::size_t, std::less<>> index_;  // name -> position in descriptors_
};

}  // namespace cachedarrays::policy

#ifdef CACHEDARRAYS_HEADER_ONLY
#include "cachedarrays/policy/registry-inl.hpp"
#endif
