// Handing a running program's objects from one policy to another
// (docs/design.md "Switching policies"): the new policy adopts the placement
// the old one left, so that no byte moves for the switch itself and every
// later move is the new policy's own decision.
#pragma once

#include "cachedarrays/config.hpp"

#include "cachedarrays/manager/data_manager.hpp"
#include "cachedarrays/policy/policy.hpp"

namespace cachedarrays::policy {

/// What a hand-over did.
struct HandOver {
  std::uint64_t objects = 0;         ///< live objects the new policy adopted
  std::uint64_t copies_dropped = 0;  ///< copies on a faster tier than their primary, freed
  std::uint64_t retired_freed = 0;   ///< retired objects the old policy still held, freed
};

/// Hands every live object of `manager` from `from` to `to`, under the
/// runtime's lock: `from`'s deferred work ends (collect), the mover's
/// copies land, a retired object `from` still holds is freed, a copy on a
/// faster device than its object's primary (a copy ahead not taken up) is
/// freed so that the fast tier holds only what `to` knows of, every
/// object's policy state is dropped, and `to` is attached and adopts every
/// object where it lies (Policy::adopt), in creation order. A primary never
/// moves and no byte of a live object changes; pinned objects stay pinned
/// where they are. `from` is left with no object and is only fit to be
/// destroyed. What `to`'s attach or adopt throws is rethrown with no
/// object holding policy state, so that a third policy may adopt them.
HandOver hand_over(DataManager& manager, Policy& from, Policy& to);

}  // namespace cachedarrays::policy

#ifdef CACHEDARRAYS_HEADER_ONLY
#include "cachedarrays/policy/hand_over-inl.hpp"
#endif
