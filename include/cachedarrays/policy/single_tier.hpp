// The single-tier baselines: every object on the fastest device ("all-fast",
// the all-DRAM reference every slowdown is measured against) or on the
// slowest ("all-slow", the all-NVRAM case). Nothing ever moves; an object
// that does not fit raises out_of_memory.
#pragma once

#include "cachedarrays/policy/policy.hpp"

namespace cachedarrays::policy {

/// The single-tier baselines: every object on the fastest device or on the
/// slowest, never moved; hints are ignored.
class SingleTier final : public Policy {
 public:
  /// Which device holds every object.
  enum class Tier {
    fastest,  ///< device 0 ("all-fast", the reference slowdowns are taken against)
    slowest   ///< the last device ("all-slow")
  };
  /// A policy that puts everything on `tier`.
  explicit SingleTier(Tier tier) : tier_(tier) {}

  /// "all-fast" or "all-slow".
  [[nodiscard]] std::string name() const override { return tier_ == Tier::fastest ? "all-fast" : "all-slow"; }
  /// False: nothing here depends on the program position.
  [[nodiscard]] bool follows_kernels() const override { return false; }
  /// Unneeded: hints never move anything here.
  [[nodiscard]] HintDelivery read_hint_delivery(const Object& /*object*/) const override {
    return HintDelivery::unneeded;
  }
  /// Unneeded, as for reads.
  [[nodiscard]] HintDelivery write_hint_delivery(const Object& /*object*/) const override {
    return HintDelivery::unneeded;
  }
  /// A region on the tier's device; false when it has no hole for the object.
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
