#include "cachedarrays/policy/first_touch.hpp"

namespace cachedarrays::policy {

bool FirstTouch::place(Object& object) {
  DataManager& dm = manager();
  for (DeviceId device = 0; device < dm.device_count(); ++device) {
    if (Region* region = dm.allocate(device, object.bytes())) {
      dm.setprimary(object, *region);
      return true;
    }
  }
  return false;
}

}  // namespace cachedarrays::policy
