// Implementation of hand_over.hpp (header-only mode includes it from there;
// the compiled library from src/policy/policy.cpp).
#pragma once

#include "cachedarrays/config.hpp"
#include "cachedarrays/policy/hand_over.hpp"

#include <vector>

namespace cachedarrays::policy {

namespace detail {

// Every object loses its policy state: the old policy's type must never be
// read as the new one's.
CACHEDARRAYS_INLINE void drop_policy_states(const std::vector<Object*>& objects) noexcept {
  for (Object* object : objects) object->set_policy_state(nullptr);
}

}  // namespace detail

CACHEDARRAYS_INLINE HandOver hand_over(DataManager& manager, Policy& from, Policy& to) {
  HandOver done;
  // The old policy's copies land, so that its collection can end what waited
  // for them (a move out for its write-back), and then what the collection
  // started lands too: nothing of the old policy's is left in flight.
  manager.finish_copies();
  from.collect();
  manager.finish_copies();
  std::vector<Object*> objects;
  manager.for_each_object([&](Object& o) { objects.push_back(&o); });
  std::vector<Object*> kept;
  kept.reserve(objects.size());
  for (Object* object : objects) {
    // The program promised never to use a retired object again: what the
    // old policy still holds of it has no other owner.
    if (object->history().retired && !object->pinned()) {
      manager.destroy(*object);
      ++done.retired_freed;
      continue;
    }
    const Region* primary = manager.getprimary(*object);
    for (DeviceId d = 0; d < manager.device(*primary); ++d) {
      if (Region* faster = manager.getlinked(*primary, d)) {
        manager.free(*faster);
        ++done.copies_dropped;
      }
    }
    kept.push_back(object);
  }
  detail::drop_policy_states(kept);
  try {
    to.attach(manager);
    for (Object* object : kept) to.adopt(*object);
  } catch (...) {
    detail::drop_policy_states(kept);
    throw;
  }
  done.objects = kept.size();
  return done;
}

}  // namespace cachedarrays::policy
