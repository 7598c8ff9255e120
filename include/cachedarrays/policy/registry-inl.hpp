// Implementation of registry.hpp (header-only mode includes it from there; the
// compiled library from src/policy/policy.cpp).
#pragma once

#include "cachedarrays/config.hpp"
#include "cachedarrays/policy/registry.hpp"

#include <utility>

#include "cachedarrays/error.hpp"
#include "cachedarrays/policy/builtin_policies.hpp"

namespace cachedarrays::policy {

CACHEDARRAYS_INLINE Registry Registry::builtin() {
  Registry r;
  for (PolicyDescriptor& d : builtin_descriptors()) r.add(std::move(d));
  return r;
}

CACHEDARRAYS_INLINE void Registry::add(std::string name, std::string description, Factory factory) {
  if (name.empty()) throw invalid_argument("cachedarrays: a policy needs a non-empty name");
  if (!factory) throw invalid_argument("cachedarrays: policy '" + name + "' needs a factory");
  add(PolicyDescriptor(
      PolicyFacts{.name = std::move(name),
                  .summary = std::move(description),
                  .factory = [factory = std::move(factory)](const PolicyOptions&) { return factory(); }}));
}

CACHEDARRAYS_INLINE void Registry::add(PolicyDescriptor descriptor) {
  if (contains(descriptor.name())) {
    throw invalid_argument("cachedarrays: a policy named '" + descriptor.name() +
                           "' is already registered; pick another name");
  }
  index_.emplace(descriptor.name(), descriptors_.size());
  descriptors_.push_back(std::move(descriptor));
}

CACHEDARRAYS_INLINE const PolicyDescriptor* Registry::registered(std::string_view name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : &descriptors_[it->second];
}

CACHEDARRAYS_INLINE bool Registry::contains(std::string_view name) const { return registered(name) != nullptr; }

CACHEDARRAYS_INLINE PolicyDescriptor Registry::describe(std::string_view name) const {
  if (const PolicyDescriptor* d = registered(name)) return *d;
  // Any other spelling of the CachedArrays switches (ca-m, ca-pl, ...), with
  // or without an offset planner (ca-lmp+smartpool).
  if (name.substr(0, 2) == "ca") {
    try {
      return cachedarrays_descriptor(std::string(name));
    } catch (const invalid_argument&) {
      // A mode that parses but cannot take a plan says why.
      if (name.find('+') != std::string_view::npos) throw;
    }
  }
  throw invalid_argument(unknown_name_message(name));
}

CACHEDARRAYS_INLINE std::optional<PolicyDescriptor> Registry::try_describe(std::string_view name) const {
  if (const PolicyDescriptor* d = registered(name)) return *d;
  try {
    return describe(name);
  } catch (const invalid_argument&) {
    return std::nullopt;
  }
}

CACHEDARRAYS_INLINE std::unique_ptr<Policy> Registry::make(std::string_view name) const {
  if (const PolicyDescriptor* d = registered(name)) return d->make();
  return describe(name).make();
}

CACHEDARRAYS_INLINE std::string Registry::unknown_name_message(std::string_view name) const {
  std::string valid;
  for (const std::string& known : names()) valid += (valid.empty() ? "" : ", ") + known;
  return "cachedarrays: unknown policy '" + std::string(name) + "'; valid policies: " + valid +
         " (and any ca-<letters>[+best-fit|+smartpool|+mip])";
}

CACHEDARRAYS_INLINE std::vector<std::string> Registry::names() const {
  std::vector<std::string> names;
  for (const auto& [name, at] : index_) {
    if (!descriptors_[at].memory_mode()) names.push_back(name);
  }
  return names;
}

CACHEDARRAYS_INLINE std::string Registry::description(std::string_view name) const {
  const PolicyDescriptor* d = registered(name);
  return d == nullptr ? std::string{} : d->summary();
}

}  // namespace cachedarrays::policy
