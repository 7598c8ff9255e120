// A region: a contiguous slice of one heap (paper III-C "Objects and
// Regions"). Its fields are read and changed only through the DataManager so
// that the manager can keep the invariants of docs/design.md; a policy holds
// Region* handles and asks the manager about them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "cachedarrays/manager/detail/relaxed_atomic.hpp"
#include "cachedarrays/types.hpp"

namespace cachedarrays {

class DataManager;
class Object;

namespace detail {
template <typename Owner>
struct Block;
struct CopyState;
}  // namespace detail

/// A contiguous slice of one device's heap (paper III-C "Objects and
/// Regions"): an object's primary or secondary copy, or free-standing. Owned
/// by the DataManager and opaque: a policy holds Region pointers and asks the
/// manager about them (DataManager::size, device, pointer, isdirty, ...).
class Region {
  // Only the DataManager makes regions (it owns them); the key lets its
  // container construct them.
  struct Key {
    explicit Key() = default;
  };
  friend class DataManager;

 public:
  /// Made by the DataManager only: Key is private to it.
  explicit Region(Key) {}
  Region(const Region&) = delete;
  Region& operator=(const Region&) = delete;

 private:
  std::byte* data_ = nullptr;
  std::uint64_t offset_ = 0;  // from the start of the heap
  std::uint64_t bytes_ = 0;   // as asked for; the heap block may be rounded up
  // The fields an unlocked access checks are relaxed atomics
  // (detail/relaxed_atomic.hpp).
  detail::RelaxedAtomic<DeviceId> device_ = 0;
  detail::RelaxedAtomic<bool> dirty_ = false;
  // Content version this region holds (see Object::version_): a secondary is
  // a valid copy only while its version equals the object's.
  detail::RelaxedAtomic<std::uint64_t> version_ = 0;
  Object* parent_ = nullptr;
  // The id of the object it last belonged to, once unlinked (0: none): the
  // trace's free event names it, so that a replay can tell whose copy out
  // of it may still be landing (plan/schedule/copy_timeline.hpp).
  std::uint64_t last_owner_ = 0;
  detail::Block<Region>* block_ = nullptr;
  // The asynchronous copy that reads or writes this region and whose
  // outcome the manager has not applied yet (invariant 7), or null.
  // (Mutable: a copy may read a region the caller passed as const.)
  mutable std::shared_ptr<detail::CopyState> copy_;
  // Whether copy_ is set, for the unlocked writes' check, which may not
  // read the shared pointer itself (DataManager::set_copy keeps the two
  // together).
  mutable detail::RelaxedAtomic<bool> has_copy_ = false;
  // The next spare region while this one is spare (the manager's free
  // list), else null.
  Region* next_spare_ = nullptr;
};

}  // namespace cachedarrays
