// Implementation of pinned_kernel.hpp (header-only mode includes it from
// there; the compiled library from src/runtime/runtime.cpp).
#pragma once

#include <string>

#include "cachedarrays/config.hpp"
#include "cachedarrays/error.hpp"
#include "cachedarrays/runtime/pinned_kernel.hpp"

namespace cachedarrays {

CACHEDARRAYS_INLINE PinnedKernel::PinnedKernel(Runtime& runtime, const char* name, std::span<Object* const> objects,
                                               std::span<const Access> accesses, std::span<std::byte*> data,
                                               double* emulated_ns)
    : runtime_(runtime), name_(name), objects_(objects), accesses_(accesses) {
  if (accesses.size() != objects.size() || data.size() != objects.size()) {
    throw invalid_argument("cachedarrays: PinnedKernel '" + std::string(name) + "' got " +
                           std::to_string(objects.size()) + " objects, " + std::to_string(accesses.size()) +
                           " accesses and " + std::to_string(data.size()) +
                           " data slots; give one of each per argument");
  }
  if (objects.size() > tokens_.size()) more_tokens_ = std::make_unique<detail::PinToken[]>(objects.size());
  index_ =
      runtime_.acquire_all(objects.data(), accesses.data(), data.data(), tokens(), objects.size(), name, emulated_ns);
}

CACHEDARRAYS_INLINE PinnedKernel::~PinnedKernel() {
  const detail::PinToken* held = tokens();
  for (std::size_t i = 0; i < objects_.size(); ++i) Runtime::release(*objects_[i], accesses_[i], held[i]);
}

}  // namespace cachedarrays
