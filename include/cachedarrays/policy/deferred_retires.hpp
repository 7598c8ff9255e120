// Retires held back until a collection. Without the paper's memory
// optimisations (CA:∅, CA:L, the 2LM:∅ baseline) a program learns that an
// object is dead only when its garbage collector runs: at collect() (the end
// of an iteration), or under memory pressure, when an allocation finds its
// device full (paper V-a). This is the one place policies keep such retires
// and run that collection.
#pragma once

#include <cstddef>
#include <utility>
#include <vector>

#include "cachedarrays/manager/data_manager.hpp"

namespace cachedarrays::policy {

/// Retires held back until a collection, for the policies that model a
/// program without the paper's memory optimisations (see first_touch.hpp).
class DeferredRetires {
 public:
  /// Holds `object` until the next collection (counted as a deferred retire
  /// in `dm`'s policy counters).
  void defer(DataManager& dm, Object& object) {
    objects_.push_back(&object);
    ++dm.policy_counters().deferred_retires;
  }
  /// Whether no retire is held.
  [[nodiscard]] bool empty() const noexcept { return objects_.empty(); }

  /// The collection: hands every held object, in the order retired, to
  /// `free_object` (which destroys it); returns whether there was any.
  /// Counted in `dm`'s policy counters.
  template <typename Free>
  bool collect(DataManager& dm, Free&& free_object) {
    std::vector<Object*> dead;
    dead.swap(objects_);
    for (Object* object : dead) free_object(*object);
    PolicyCounters& counters = dm.policy_counters();
    counters.collected += dead.size();
    if (!dead.empty()) ++counters.collections;
    return !dead.empty();
  }

  /// `allocate()`, and when it finds no room (returns null) while retires are
  /// held, the collection under pressure and one more try. Returns the
  /// region, or null when there is still no room.
  template <typename Allocate, typename Free>
  Region* allocate_or_collect(DataManager& dm, Allocate&& allocate, Free&& free_object) {
    Region* region = allocate();
    if (region == nullptr && collect(dm, std::forward<Free>(free_object))) region = allocate();
    return region;
  }

 private:
  std::vector<Object*> objects_;
};

}  // namespace cachedarrays::policy
