// Implementation of first_touch.hpp (header-only mode includes it from there; the
// compiled library from src/policy/policy.cpp).
#pragma once

#include "cachedarrays/config.hpp"
#include "cachedarrays/policy/first_touch.hpp"

namespace cachedarrays::policy {

CACHEDARRAYS_INLINE Region* FirstTouch::allocate_first_fit(std::uint64_t bytes) {
  DataManager& dm = manager();
  for (DeviceId device = 0; device < dm.device_count(); ++device) {
    if (Region* region = dm.allocate(device, bytes)) return region;
  }
  return nullptr;
}

CACHEDARRAYS_INLINE bool FirstTouch::place(Object& object) {
  DataManager& dm = manager();
  Region* region = retired_.allocate_or_collect(
      dm, [&] { return allocate_first_fit(object.bytes()); }, [&](Object& dead) { dm.destroy(dead); });
  if (region == nullptr) return false;
  dm.setprimary(object, *region);
  return true;
}

CACHEDARRAYS_INLINE void FirstTouch::retire(Object& object) {
  if (retire_ == Retire::at_once) {
    manager().destroy(object);
  } else {
    retired_.defer(manager(), object);
  }
}

CACHEDARRAYS_INLINE void FirstTouch::collect() {
  retired_.collect(manager(), [this](Object& dead) { manager().destroy(dead); });
}

}  // namespace cachedarrays::policy
