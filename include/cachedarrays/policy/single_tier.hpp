// The single-tier baselines: every object on the fastest device ("all-fast",
// the all-DRAM reference every slowdown is measured against) or on the
// slowest ("all-slow", the all-NVRAM case). Nothing ever moves; an object
// that does not fit raises out_of_memory.
#pragma once

#include "cachedarrays/policy/policy.hpp"

namespace cachedarrays::policy {

class SingleTier final : public Policy {
 public:
  enum class Tier { fastest, slowest };
  explicit SingleTier(Tier tier) : tier_(tier) {}

  [[nodiscard]] std::string name() const override { return tier_ == Tier::fastest ? "all-fast" : "all-slow"; }
  [[nodiscard]] bool follows_kernels() const override { return false; }
  [[nodiscard]] bool place(Object& object) override {
    DataManager& dm = manager();
    const DeviceId device = tier_ == Tier::fastest ? 0 : dm.device_count() - 1;
    Region* region = dm.allocate(device, object.bytes());
    if (region == nullptr) return false;
    dm.setprimary(object, *region);
    return true;
  }

 private:
  Tier tier_;
};

}  // namespace cachedarrays::policy
