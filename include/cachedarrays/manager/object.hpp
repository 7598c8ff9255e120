// An object: the unit the program names (paper III-C). It has exactly one
// primary region between creation and destruction, and at most one region
// on each device; the others are secondaries (copies), valid only while the
// primary is clean.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <list>
#include <memory>
#include <optional>
#include <type_traits>

#include "cachedarrays/manager/detail/relaxed_atomic.hpp"
#include "cachedarrays/manager/pin_slots.hpp"
#include "cachedarrays/types.hpp"

namespace cachedarrays {

class DataManager;
class Region;
class Runtime;

/// What a policy keeps per object (LRU links, flags): a type of the policy's
/// own, derived from this, that the object owns and frees when it dies —
/// whoever destroys it and in whatever order a runtime's members go
/// (docs/design.md invariant 8: no void* slots).
class PolicyState {
 public:
  /// Frees the policy's per-object data with the object.
  virtual ~PolicyState() = default;
};

/// The unit the program names (paper III-C): between creation and
/// destruction it has exactly one primary region and at most one region on
/// each device; the others are secondaries (copies), valid only while the
/// primary is clean. Owned by the DataManager (create_object, destroy).
class Object {
  // Only the DataManager makes objects (it owns them); the key lets its
  // container construct them.
  struct Key {
    explicit Key() = default;
  };
  friend class DataManager;
  // The Runtime's unlocked reads (runtime.hpp) keep their state here.
  friend class Runtime;

 public:
  /// Made by the DataManager only: Key is private to it.
  explicit Object(Key) {}
  Object(const Object&) = delete;
  Object& operator=(const Object&) = delete;

  /// The object's number, unique within its manager (from 1, in creation order).
  [[nodiscard]] std::uint64_t id() const noexcept { return id_; }
  /// The object's size in bytes, as created; every region of it has this size.
  [[nodiscard]] std::uint64_t bytes() const noexcept { return bytes_; }
  /// Pinned by a scoped access: its primary cannot move, be evicted or freed.
  /// (An access that skipped the runtime's lock may hold its pin in its
  /// thread's own slots: pin_slots.hpp.)
  [[nodiscard]] bool pinned() const noexcept {
    if ((pins_.load(std::memory_order_seq_cst) & pin_mask) != 0) return true;
    return slot_pinned_.load(std::memory_order_seq_cst) && detail::pin_slots().holds(this);
  }
  /// True while a write access is open: copies taken now would be stale.
  [[nodiscard]] bool being_written() const noexcept {
    if ((pins_.load(std::memory_order_seq_cst) >> writer_shift) != 0) return true;
    return slot_pinned_.load(std::memory_order_seq_cst) && detail::pin_slots().holds_write(this);
  }
  /// How a will_read hint on this object may reach the policy from a thread
  /// without the runtime's lock (Policy::read_hint_delivery, as the policy
  /// last answered for this object); under_lock again whenever the primary
  /// changes, until the policy is asked anew.
  [[nodiscard]] HintDelivery read_hint_delivery() const noexcept {
    return static_cast<HintDelivery>(read_delivery_.load(std::memory_order_relaxed));
  }
  /// The same for a will_write hint (Policy::write_hint_delivery).
  [[nodiscard]] HintDelivery write_hint_delivery() const noexcept {
    return static_cast<HintDelivery>(write_delivery_.load(std::memory_order_relaxed));
  }

  /// The policy's state for this object, as the policy's own type `State`
  /// (the one it attached), or null before it attached any.
  template <typename State>
  [[nodiscard]] State* policy_state() const noexcept {
    static_assert(std::is_base_of_v<PolicyState, State>, "a policy's per-object state derives from PolicyState");
    return static_cast<State*>(policy_state_.get());
  }
  /// Attaches (or replaces, freeing the old) the policy's state; the object
  /// owns it from now on.
  void set_policy_state(std::unique_ptr<PolicyState> state) noexcept { policy_state_ = std::move(state); }

  /// What the Runtime that made the object remembers of it for memory
  /// snapshots (runtime/memory_snapshot.hpp), under the runtime's lock: when
  /// it was made, whether it was retired (the last hint is last_hint()).
  /// made_by_runtime false: made through the data manager directly.
  struct History {
    bool made_by_runtime = false;         ///< False: made through the data manager directly.
    bool retired = false;                 ///< The program retired it; the policy still holds it.
    std::uint64_t created_iteration = 0;  ///< Runtime::iteration() when it was made.
    std::uint64_t created_ns = 0;         ///< When it was made, in ns since the Runtime was made.
  };
  /// The last hint the object got from the program or from an access of it;
  /// empty: none yet. Readable from any thread.
  [[nodiscard]] std::optional<Hint> last_hint() const noexcept {
    const std::uint8_t stored = last_hint_.load(std::memory_order_relaxed);
    if (stored == 0) return std::nullopt;
    return static_cast<Hint>(stored - 1);
  }
  /// Records `hint` as the last one; a retire also marks the object retired.
  /// A read that skips the runtime's lock records its will_read too, so the
  /// hint is kept apart from History, in an atomic: one store, and none when
  /// it is the hint already there (threads reading one array then share its
  /// cache line without writing it).
  void hinted(Hint hint) noexcept {
    const auto stored = static_cast<std::uint8_t>(static_cast<std::uint8_t>(hint) + 1);
    if (last_hint_.load(std::memory_order_relaxed) != stored) last_hint_.store(stored, std::memory_order_relaxed);
    if (hint == Hint::retire) history_.retired = true;
  }
  /// What the runtime remembers of the object (read under the runtime's lock).
  [[nodiscard]] const History& history() const noexcept { return history_; }
  /// The same, for the Runtime to update.
  [[nodiscard]] History& history() noexcept { return history_; }

 private:
  std::uint64_t id_ = 0;
  std::uint64_t bytes_ = 0;
  // The fields an unlocked access checks are relaxed atomics
  // (detail/relaxed_atomic.hpp).
  detail::RelaxedAtomic<Region*> primary_ = nullptr;
  std::array<detail::RelaxedAtomic<Region*>, max_devices> on_device_{};  // invariant 2: one per device
  // Bumped whenever the primary may have changed; secondaries carrying an
  // older version are stale (invariant 4).
  detail::RelaxedAtomic<std::uint64_t> version_ = 0;
  // Open accesses in the low half, write accesses among them in the high
  // half: a pin of either kind is one atomic add.
  static constexpr unsigned writer_shift = 32;
  static constexpr std::uint64_t pin_mask = (std::uint64_t{1} << writer_shift) - 1;
  static constexpr std::uint64_t write_pin = (std::uint64_t{1} << writer_shift) + 1;
  std::atomic<std::uint64_t> pins_{0};
  // Set, for good, by the first unlocked access that pins the object in a
  // thread's slots (pin_slots.hpp): pinned() looks in the slots only for
  // such objects. Written once, so accesses on several threads then share
  // its line without writing it.
  std::atomic<bool> slot_pinned_{false};
  // HintDeliveries; written under the runtime's lock, read by unlocked
  // reads and writes.
  std::atomic<std::uint8_t> read_delivery_{0};
  std::atomic<std::uint8_t> write_delivery_{0};
  // Deferred hints waiting for delivery (deferred_read | deferred_write), on
  // the runtime's list through next_deferred_ while any is set (runtime.hpp).
  static constexpr std::uint8_t deferred_read = 1, deferred_write = 2;
  std::atomic<std::uint8_t> deferred_hints_{0};
  std::atomic<std::uint8_t> last_hint_{0};  // a Hint + 1; 0: none yet
  Object* next_deferred_ = nullptr;
  std::unique_ptr<PolicyState> policy_state_;
  History history_;
  // Where the manager's list of live objects (creation order) holds this one.
  std::list<Object>::iterator self_;
};

}  // namespace cachedarrays
