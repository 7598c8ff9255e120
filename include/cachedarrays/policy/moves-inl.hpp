// Implementation of moves.hpp (header-only mode includes it from there; the
// compiled library from src/policy/policy.cpp).
#pragma once

#include "cachedarrays/config.hpp"
#include "cachedarrays/policy/moves.hpp"

namespace cachedarrays::policy {

namespace detail {

// Lets the copy issued ahead into `region` land. A failed one (copy_error at
// its fence) leaves the region invalid, which the caller handles like any
// stale copy: the move goes on with a copy of its own.
CACHEDARRAYS_INLINE void settle_ahead(DataManager& dm, Region& region) {
  try {
    dm.wait_for_copy(region);
  } catch (const copy_error&) {
  }
}

// The copy of a move. A failed copy abandons the move, which was only ever
// an optimisation: the object keeps its primary where it is, intact, and
// the region taken for it is given back. Counted, never thrown, so a
// media error on one copy does not end the program's run.
CACHEDARRAYS_INLINE bool copy_or_abandon(DataManager& dm, Region& dst, const Region& src, bool allocated) {
  try {
    dm.copyto(dst, src);
    return true;
  } catch (const copy_error&) {
    if (allocated) dm.free(dst);
    ++dm.policy_counters().moves_abandoned;
    return false;
  }
}

}  // namespace detail

CACHEDARRAYS_INLINE EvictOutcome evict(DataManager& dm, Object& object, DeviceId fast, DeviceId slow) {
  Region* x = dm.getprimary(object);                     // Listing 1, line 2
  if (x == nullptr || dm.device(*x) != fast) return {};  // line 3
  if (object.pinned()) return {};                        // an open access: its primary must stay
  Region* y = dm.getlinked(*x, slow);                    // line 4
  const bool allocated = y == nullptr;
  if (allocated) {  // lines 7-10
    y = dm.allocate(slow, dm.size(*x));
    if (y == nullptr) return {};
  }
  // A write-back issued ahead (copyto_async) is let land rather than made
  // again; one that failed leaves y invalid, and is made again below.
  if (!allocated && dm.in_flight(*y)) detail::settle_ahead(dm, *y);
  // Lines 11-13: a clean fast copy of a linked slow region needs no
  // write-back. The paper asks isdirty(x); a valid slow copy is the exact
  // form of that question, and it also holds when a dirty primary was
  // written back ahead (copyto_async) since its last write.
  const bool write_back = allocated || !dm.isvalid(*y);
  if (write_back && !detail::copy_or_abandon(dm, *y, *x, allocated)) return {};
  dm.setprimary(object, *y);          // line 14
  if (!allocated) dm.unlink(*x, *y);  // lines 15-17
  dm.free(*x);                        // line 18

  PolicyCounters& counters = dm.policy_counters();
  ++counters.evictions;
  if (write_back) {
    ++counters.writebacks;
    counters.writeback_bytes += object.bytes();
    counters.bytes_written[slow] += object.bytes();
  } else {
    ++counters.writebacks_elided;
  }
  return {true, write_back};
}

CACHEDARRAYS_INLINE bool prefetch(DataManager& dm, Object& object, DeviceId fast, DeviceId slow,
                                  const std::function<bool(std::uint64_t bytes)>& make_room) {
  Region* x = dm.getprimary(object);  // Listing 2, line 3
  if (x == nullptr) return false;
  if (dm.device(*x) == fast) return true;
  if (dm.device(*x) != slow) return false;  // line 4
  if (object.pinned()) return false;        // an open access: its primary must stay
  if (Region* existing = dm.getlinked(*x, fast)) {
    // A fast secondary already exists (a policy made slow the primary
    // without dropping it, or issued this prefetch ahead with copyto_async
    // and it may still be in flight): promote it if it is a valid copy.
    if (dm.in_flight(*existing)) detail::settle_ahead(dm, *existing);
    if (dm.isvalid(*existing)) {
      dm.setprimary(object, *existing);
      return true;
    }
    dm.free(*existing);
  }
  const std::uint64_t bytes = dm.size(*x);  // line 5
  Region* y = dm.allocate(fast, bytes);     // line 6
  if (y == nullptr) {                       // lines 7-17
    if (!make_room || !make_room(bytes)) return false;
    y = dm.allocate(fast, bytes);
    if (y == nullptr) return false;
  }
  if (!detail::copy_or_abandon(dm, *y, *x, /*allocated=*/true)) return false;  // line 18
  dm.link(*x, *y);                                                             // line 19
  dm.setprimary(object, *y);                                                   // line 20

  PolicyCounters& counters = dm.policy_counters();
  ++counters.prefetches;
  counters.prefetch_bytes += bytes;
  counters.bytes_written[fast] += bytes;
  return true;
}

}  // namespace cachedarrays::policy
