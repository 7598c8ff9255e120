// The two moves every tiering policy is built from, written on the data
// manager API exactly as the paper's listings (paper III-C, Listing 1 and
// Listing 2). They keep the invariant the paper's policies rely on: if an
// object has a region in the fast device, that region is its primary.
#pragma once

#include "cachedarrays/config.hpp"

#include <cstdint>
#include <functional>
#include <optional>

#include "cachedarrays/manager/data_manager.hpp"

namespace cachedarrays::policy {

/// What evict() did.
struct EvictOutcome {
  bool moved = false;       ///< the primary is on the slow device now
  bool wrote_back = false;  ///< bytes were copied to the slow device
};
/// Listing 1: moves the object's primary from `fast` to `slow`. Reuses a
/// linked slow copy when one exists and writes back only when the fast copy
/// is dirty (or the slow region is new); otherwise the copy is elided.
/// Returns `moved` false, changing nothing, when the primary is not on `fast`
/// or the slow device has no hole for it.
EvictOutcome evict(DataManager& dm, Object& object, DeviceId fast, DeviceId slow);

/// Listing 2: copies a primary that lives on `slow` into `fast`, links the
/// two and makes the fast copy the primary. When `fast` is full and
/// `make_room` is given, it is called with the bytes needed and should free
/// a hole (typically through evictfrom); then allocation is tried again.
/// Returns true when the object's primary is on `fast` afterwards.
bool prefetch(DataManager& dm, Object& object, DeviceId fast, DeviceId slow,
              const std::function<bool(std::uint64_t bytes)>& make_room = {});

}  // namespace cachedarrays::policy

#ifdef CACHEDARRAYS_HEADER_ONLY
#include "cachedarrays/policy/moves-inl.hpp"
#endif
