// First touch (the NUMA first-touch baseline of AutoTM and CachedArrays):
// a new object goes to the fastest device with a hole large enough, and
// never moves afterwards. Hints are ignored; retire frees at once.
#pragma once

#include "cachedarrays/policy/policy.hpp"

namespace cachedarrays::policy {

class FirstTouch final : public Policy {
 public:
  [[nodiscard]] std::string name() const override { return "first-touch"; }
  [[nodiscard]] bool place(Object& object) override;
};

}  // namespace cachedarrays::policy
