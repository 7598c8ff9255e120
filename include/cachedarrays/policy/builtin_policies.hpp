// The built-in policies' descriptors (policy_descriptor.hpp), the one place
// that knows what each built-in name stands for: the baselines, the 2LM
// memory modes, the CachedArrays modes and their offset-planned forms, and
// the policies that plan the iteration ahead (AutoTM, AutoSwap, ReDL).
// Registry::builtin() registers them; any other CachedArrays spelling
// ("ca-pl", "ca-lmp+mip") is described by cachedarrays_descriptor().
#pragma once

#include "cachedarrays/config.hpp"

#include <string>
#include <vector>

#include "cachedarrays/policy/policy_descriptor.hpp"

namespace cachedarrays::policy {

/// The built-in descriptors in the order the capacity planner and the
/// benchmarks present them: the baselines with the measured memory mode
/// 2lm:m, the CachedArrays modes and their offset-planned forms, the
/// modeled-only memory mode 2lm, then the policies that plan ahead (AutoTM's
/// formulations, AutoSwap's scores, ReDL).
[[nodiscard]] std::vector<PolicyDescriptor> builtin_descriptors();

/// The descriptor of the CachedArrays mode spelled `name` ("ca", "ca-" and
/// the letters L, M, P, A in any order, or "hw-cache"; a mode with L and M
/// may end in "+best-fit", "+smartpool" or "+mip"), with `summary` (empty:
/// one made from the mode) and the paper `section`. Throws Mode::parse's
/// invalid_argument for any other spelling.
[[nodiscard]] PolicyDescriptor cachedarrays_descriptor(const std::string& name, std::string summary = {},
                                                       std::string section = "003 §IV");

}  // namespace cachedarrays::policy

#ifdef CACHEDARRAYS_HEADER_ONLY
#include "cachedarrays/policy/builtin_policies-inl.hpp"
#endif
