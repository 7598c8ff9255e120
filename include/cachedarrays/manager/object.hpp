// An object: the unit the program names (paper III-C). It has exactly one
// primary region between creation and destruction, and at most one region
// on each device; the others are secondaries (copies), valid only while the
// primary is clean.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>

#include "cachedarrays/types.hpp"

namespace cachedarrays {

class DataManager;
class Region;

class Object {
 public:
  Object(const Object&) = delete;
  Object& operator=(const Object&) = delete;

  [[nodiscard]] std::uint64_t id() const noexcept { return id_; }
  [[nodiscard]] std::uint64_t bytes() const noexcept { return bytes_; }
  // Pinned by a scoped access: its primary cannot move, be evicted or freed.
  [[nodiscard]] bool pinned() const noexcept { return pins_.load(std::memory_order_acquire) != 0; }
  // True while a write access is open: copies taken now would be stale.
  [[nodiscard]] bool being_written() const noexcept {
    return writers_.load(std::memory_order_acquire) != 0;
  }

  // Free for the policy's own bookkeeping (LRU links, flags). The manager
  // never reads it; the policy that set it owns what it points to.
  void* policy_state = nullptr;

 private:
  friend class DataManager;
  Object() = default;

  std::uint64_t id_ = 0;
  std::uint64_t bytes_ = 0;
  Region* primary_ = nullptr;
  std::array<Region*, max_devices> on_device_{};  // invariant 2: one per device
  // Bumped whenever the primary may have changed; secondaries carrying an
  // older version are stale (invariant 4).
  std::uint64_t version_ = 0;
  std::atomic<std::uint32_t> pins_{0};
  std::atomic<std::uint32_t> writers_{0};
  bool retired_ = false;
  // Intrusive list of live objects, for walks and invariant checks.
  Object* prev_ = nullptr;
  Object* next_ = nullptr;
};

}  // namespace cachedarrays
