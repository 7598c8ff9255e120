// First touch (the NUMA first-touch baseline of AutoTM and CachedArrays):
// a new object goes to the fastest device with a hole large enough, and
// never moves afterwards. Hints are ignored. Retire frees at once, or — for
// a garbage-collected program without the paper's memory optimisations, as
// the 2LM:∅ baseline — only at collect() or when an allocation finds every
// device full.
#pragma once

#include "cachedarrays/config.hpp"

#include "cachedarrays/policy/deferred_retires.hpp"
#include "cachedarrays/policy/policy.hpp"

namespace cachedarrays::policy {

/// The NUMA first-touch baseline: a new object goes to the fastest device
/// with a hole large enough and never moves; hints are ignored.
class FirstTouch final : public Policy {
 public:
  /// When a retired object is freed.
  enum class Retire {
    at_once,    ///< at the retire (a program with the paper's memory optimisations)
    at_collect  ///< at collect() or under memory pressure (a garbage-collected program: 2LM:∅)
  };
  /// A first-touch policy that frees retired objects as `retire` says.
  explicit FirstTouch(Retire retire = Retire::at_once) : retire_(retire) {}

  /// "first-touch".
  [[nodiscard]] std::string name() const override { return "first-touch"; }
  /// False: first touch never looks at the program position.
  [[nodiscard]] bool follows_kernels() const override { return false; }
  /// Unneeded: hints never move anything here.
  [[nodiscard]] HintDelivery read_hint_delivery(const Object& /*object*/) const override {
    return HintDelivery::unneeded;
  }
  /// Unneeded, as for reads.
  [[nodiscard]] HintDelivery write_hint_delivery(const Object& /*object*/) const override {
    return HintDelivery::unneeded;
  }
  /// The first device, fastest first, with a hole for the object; when none
  /// has one and retires are held, they are collected and the devices tried
  /// again. False when there is still no room.
  [[nodiscard]] bool place(Object& object) override;
  /// Frees the object at once, or holds it until the next collection
  /// (Retire::at_collect).
  void retire(Object& object) override;
  /// Frees the retired objects held, if any.
  void collect() override;

 private:
  Region* allocate_first_fit(std::uint64_t bytes);

  Retire retire_;
  DeferredRetires retired_;
};

}  // namespace cachedarrays::policy

#ifdef CACHEDARRAYS_HEADER_ONLY
#include "cachedarrays/policy/first_touch-inl.hpp"
#endif
