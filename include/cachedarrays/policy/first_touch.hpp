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

class FirstTouch final : public Policy {
 public:
  enum class Retire { at_once, at_collect };
  explicit FirstTouch(Retire retire = Retire::at_once) : retire_(retire) {}

  [[nodiscard]] std::string name() const override { return "first-touch"; }
  [[nodiscard]] bool follows_kernels() const override { return false; }
  [[nodiscard]] bool place(Object& object) override;
  void retire(Object& object) override;
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
