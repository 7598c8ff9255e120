// The data manager: the mechanism of paper III-C "Data management API".
// It allocates, copies, links and frees regions on preallocated heaps and
// tracks which region of an object is the primary; it never decides what to
// move (that is the policy's job). Function names are the paper's so that a
// reader of the paper finds them (`size` is the paper's `sizeof`, `device`
// its `in`).
//
// The manager is not internally synchronised: the Runtime serialises every
// call behind one lock (hints arrive once per kernel, so one lock is enough).
// Only Object::pinned()/being_written() and the unpin path are atomic, so a
// scoped access can end without taking the lock.
#pragma once

#include "cachedarrays/config.hpp"

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <list>
#include <memory>
#include <string>
#include <vector>

#include "cachedarrays/error.hpp"
#include "cachedarrays/heap/device_spec.hpp"
#include "cachedarrays/manager/fence.hpp"
#include "cachedarrays/manager/mover.hpp"
#include "cachedarrays/manager/object.hpp"
#include "cachedarrays/manager/region.hpp"
#include "cachedarrays/manager/stats.hpp"
#include "cachedarrays/manager/thread_stripes.hpp"
#include "cachedarrays/manager/trace.hpp"
#include "cachedarrays/types.hpp"

namespace cachedarrays {

namespace detail {
template <typename Owner>
class Heap;
}

/// The mechanism of paper III-C "Data management API": allocates, copies,
/// links and frees regions on preallocated heaps (one per device) and tracks
/// which region of each object is the primary; it never decides what to
/// move (that is the policy's job). Not internally synchronised: the Runtime
/// serialises every call behind one lock. Calls naming a device it does not
/// have throw unknown_device.
class DataManager {
 public:
  /// Reserves every device's whole capacity now (prefaulted). Throws
  /// invalid_argument / heap_error for a bad spec, naming the device.
  /// `mover` configures the threads of copyto_async (started on first use).
  explicit DataManager(std::vector<DeviceSpec> devices, MoverOptions mover = {});
  /// Finishes the queued asynchronous copies, then frees every object,
  /// region and heap.
  ~DataManager();
  DataManager(const DataManager&) = delete;
  DataManager& operator=(const DataManager&) = delete;

  // ---- devices --------------------------------------------------------------
  /// How many devices (heaps) the manager has; they are numbered from 0.
  [[nodiscard]] DeviceId device_count() const noexcept;
  /// The spec the device was made from.
  [[nodiscard]] const DeviceSpec& spec(DeviceId device) const;
  /// Occupancy: capacity, bytes used, largest free block, live regions.
  [[nodiscard]] DeviceUsage usage(DeviceId device) const;
  /// usage(device) of every device, in device order.
  [[nodiscard]] std::vector<DeviceUsage> usage() const;
  /// The heap's capacity in bytes (cheaper than usage(device).capacity).
  [[nodiscard]] std::uint64_t capacity(DeviceId device) const;
  /// True when the device's heap is real persistent memory (libpmem says so).
  [[nodiscard]] bool is_pmem(DeviceId device) const;
  /// True for DeviceKind::virtual_address heaps (nothing is stored).
  [[nodiscard]] bool is_virtual(DeviceId device) const;
  /// Where the heap's memory comes from, for logs.
  [[nodiscard]] std::string describe(DeviceId device) const;

  /// Clears [start, start + bytes) of `device`'s heap (offsets from the heap
  /// start, as returned by `offset`) by handing each live region in it to
  /// `evict`, which must free the region, typically by moving its object
  /// elsewhere (paper Listing 2, lines 9-13), and return true, or return false
  /// to decline. Returns true when the whole range is one free hole. On a
  /// decline the heap is left consistent and false is returned. Throws
  /// pinned_error, before touching anything, if the range holds the primary
  /// of a pinned object; invalid_argument if the range is outside the heap.
  bool evictfrom(DeviceId device, std::uint64_t start, std::uint64_t bytes, const std::function<bool(Region&)>& evict);
  /// Slides regions towards the start of the heap so free space becomes one
  /// hole; primaries of pinned objects stay where they are. With
  /// until_hole > 0 it stops as soon as some free block holds that many
  /// bytes (moving no more than needed). Returns the number of regions moved.
  std::uint64_t defrag(DeviceId device, std::uint64_t until_hole = 0);
  /// A free block of `bytes` made by moving as few bytes as it can within
  /// the heap: of the windows of that size (rounded up to the alignment)
  /// holding no pinned primary, the one holding the fewest live bytes is
  /// cleared by moving each region in it into the best-fitting hole outside
  /// it (a copy within the device, counted and traced as a defrag move).
  /// defrag(device, bytes) slides every region above the first hole until
  /// one is large enough; this moves the window's only. Returns true when a
  /// free block of `bytes` exists afterwards (at once when one already
  /// did); false when no window's regions fit in the holes outside it — the
  /// regions moved before one did not fit stay where they went, each intact.
  bool make_hole(DeviceId device, std::uint64_t bytes);

  // ---- objects --------------------------------------------------------------
  /// A new object of `bytes` with no region yet: give it one with setprimary
  /// before anything reads it. Throws invalid_argument for 0 bytes.
  Object& create_object(std::uint64_t bytes);
  /// Frees every region of the object and the object itself. Throws
  /// pinned_error if it is pinned.
  void destroy(Object& object);
  /// The object's primary region (the one holding its current contents), or
  /// null before setprimary gave it one.
  [[nodiscard]] Region* getprimary(const Object& object) const noexcept { return object.primary_; }
  /// Makes `region` the object's primary. The region must be free-standing
  /// (it then joins the object) or already one of the object's regions, of
  /// the object's size, and — when the object already has a primary — hold a
  /// valid copy of the current contents (invariant 4). Throws pinned_error if
  /// the object is pinned and the primary would change.
  void setprimary(Object& object, Region& region);

  // ---- regions --------------------------------------------------------------
  /// A free-standing region of `bytes` on `device`, or null when no hole is
  /// large enough (full is a normal outcome here).
  [[nodiscard]] Region* allocate(DeviceId device, std::uint64_t bytes);
  /// A free-standing region of `bytes` at exactly heap offset `offset` of
  /// `device` (offsets as `offset(region)` gives them), for offset planners
  /// that place objects at planned addresses; it covers [offset, offset +
  /// bytes rounded up to the device's alignment). Returns null, changing
  /// nothing, when any byte of that range belongs to a live region or is
  /// held back by an evictfrom in progress (a plan's executor then falls
  /// back to allocate). Throws invalid_argument for 0 bytes, for a range
  /// that does not lie inside the heap, and for an offset that is not a
  /// multiple of the device's alignment (DeviceSpec::alignment): an offset
  /// is never rounded, since a rounded one could overlap the planned
  /// neighbour. Once placed it is an ordinary region: defrag may slide it
  /// down like any other (offset() then differs from the plan; a pinned
  /// primary stays where it is), and evictfrom may clear it.
  [[nodiscard]] Region* try_allocate_at(DeviceId device, std::uint64_t offset, std::uint64_t bytes);
  /// try_allocate_at for a range that must be free: when it is not, throws
  /// invalid_operation naming the live regions it overlaps.
  Region& allocate_at(DeviceId device, std::uint64_t offset, std::uint64_t bytes);
  /// Frees a free-standing region or a secondary. An object's primary cannot
  /// be freed (invariant 1): destroy the object or setprimary elsewhere first.
  void free(Region& region);
  /// Copies src's bytes into dst; both must have the same size and must not
  /// be the same region. dst becomes a clean, valid copy of src. A copy that
  /// fails (a media error; tests inject one) throws copy_error: src is
  /// untouched and dst holds no valid copy — when dst is a primary, the
  /// object's contents are the torn bytes and its other copies stale.
  void copyto(Region& dst, const Region& src);
  /// The same copy, made by the mover beside the caller; returns its fence.
  /// The destination must not be a primary (a copy in flight is not the
  /// object's contents yet). Until the copy is done (invariant 7) both
  /// regions are "in flight": dst is not a valid copy, and every operation
  /// that would read dst's bytes, overwrite src's or free or move either
  /// (setprimary, copyto, free, destroy, setdirty, a write pin, defrag) first
  /// waits for it; a read pin of src's object does not wait. The wait at
  /// setprimary(dst) and copyto from dst rethrows a failed copy, which leaves
  /// dst invalid and src untouched. A region already in flight is waited for
  /// before the new copy is queued. `priority` orders it on the mover's queue
  /// (CopyPriority); a fence waited for settles it whatever its place.
  Fence copyto_async(Region& dst, const Region& src, CopyPriority priority = CopyPriority::normal);
  /// True while an asynchronous copy reads or writes `region`.
  [[nodiscard]] bool in_flight(const Region& region) const noexcept;
  /// Waits for the asynchronous copy reading or writing `region` (if any)
  /// and applies its outcome; when `region` is that copy's destination, its
  /// failure is rethrown here. The time waited counts as a fence wait.
  void wait_for_copy(const Region& region);
  /// Waits for every asynchronous copy and applies its outcome (a failed one
  /// is counted, not thrown: its fence holds the failure).
  void finish_copies();
  /// Applies the outcome of the copies that have finished, without waiting
  /// (their regions stop being in flight; the stats count them).
  void poll_copies();
  /// Associates a and b with the same object. At least one must belong to an
  /// object, the other joins it; they must be on different devices, of the
  /// same size, and the object must have no other region on the joining
  /// region's device (invariant 2).
  void link(Region& a, Region& b);
  /// Dissociates the non-primary one of a and b from their object (b, if
  /// neither is the primary); it becomes free-standing, to be freed or reused.
  void unlink(Region& a, Region& b);
  /// The region of `region`'s object on `device`, or null. Throws
  /// unknown_device for a device this manager does not have.
  [[nodiscard]] Region* getlinked(const Region& region, DeviceId device) const;
  /// The region's size in bytes, as allocated (the paper's `sizeof`).
  [[nodiscard]] std::uint64_t size(const Region& region) const noexcept { return region.bytes_; }
  /// The device the region lies on (the paper's `in`).
  [[nodiscard]] DeviceId device(const Region& region) const noexcept { return region.device_; }
  /// The region's dirty flag: set by setdirty, a write pin or a copy into a
  /// primary (newer contents than any other copy may hold); a copy into a
  /// secondary leaves it clean.
  [[nodiscard]] bool isdirty(const Region& region) const noexcept { return region.dirty_; }
  /// Sets or clears the region's dirty flag (waiting first for a copy in
  /// flight on it). Marking the primary dirty makes every secondary stale.
  void setdirty(Region& region, bool dirty);
  /// The object the region belongs to, or null for a free-standing region.
  [[nodiscard]] Object* parent(const Region& region) const noexcept { return region.parent_; }
  /// The region's first byte (an inaccessible address on a virtual device).
  [[nodiscard]] std::byte* pointer(const Region& region) const noexcept { return region.data_; }
  /// The region's start, in bytes from the start of its device's heap.
  [[nodiscard]] std::uint64_t offset(const Region& region) const noexcept { return region.offset_; }
  /// True when `region` is a secondary whose contents equal the primary's.
  [[nodiscard]] bool isvalid(const Region& region) const noexcept;

  // ---- access pins (used by the Runtime's scoped accesses) ------------------
  /// Pins the object so its primary cannot move; a write pin also marks the
  /// primary dirty. Call under the runtime lock. Throws invalid_operation
  /// for an object without a primary.
  void pin(Object& object, Access access) { (void)pin(object, access, detail::no_thread_number); }
  /// pin() for the Runtime's accesses under its lock: the pin goes in a
  /// slot of the calling thread, whose number is `thread`
  /// (detail::this_thread_number()), when it has one free (pin_slots.hpp;
  /// no fence: the lock orders it before any other holder's look), else in
  /// the pin word; returns where, for unpin.
  detail::PinToken pin(Object& object, Access access, std::size_t thread);
  /// Pins the object for an access that skips the runtime lock
  /// (runtime/unlocked_access-inl.hpp), in a slot of the calling thread
  /// (pin_slots.hpp), or in its pin word when the thread has none free;
  /// returns where. A slot's pin is a relaxed store: the caller fences
  /// (seq_cst) after its last pin, then checks that no lock holder ran.
  /// `thread`: the calling thread's number (detail::this_thread_number()).
  static detail::PinToken pin_unlocked(Object& object, Access access, std::size_t thread) noexcept {
    const detail::PinToken token = detail::pin_slots().pin(&object, access == Access::write, thread);
    if (token == detail::pin_word) {
      object.pins_.fetch_add(access == Access::write ? Object::write_pin : 1, std::memory_order_seq_cst);
      return token;
    }
    if (!object.slot_pinned_.load(std::memory_order_relaxed))
      object.slot_pinned_.store(true, std::memory_order_relaxed);
    return token;
  }
  /// Ends a pin, taken under the lock (token pin_word) or not; safe without
  /// the runtime lock (atomic).
  static void unpin(Object& object, Access access, detail::PinToken token = detail::pin_word) noexcept {
    if (token != detail::pin_word) {
      detail::pin_slots().unpin(token);
      return;
    }
    object.pins_.fetch_sub(access == Access::write ? Object::write_pin : 1, std::memory_order_release);
  }
  /// Counts a pinned access's bytes against the device of the object's
  /// primary, and returns the extra nanoseconds the access costs when that
  /// device is emulated (0 otherwise); the caller waits them out.
  double note_access(const Object& object, Access access);
  /// Whether a read of `object` may be counted without the runtime lock:
  /// false when its primary's device is emulated in 2LM memory mode, whose
  /// cache model only the lock holder may update.
  [[nodiscard]] bool readable_unlocked(const Object& object) const noexcept {
    const Region* primary = object.primary_;
    return primary != nullptr && memory_mode_[primary->device_] == nullptr;
  }
  /// Whether a write access may pin `object` without the runtime lock: its
  /// primary is already dirty (so the write sets no flag and needs no new
  /// content version), no copy reads or fills any of its regions, and every
  /// other region is already stale (so none it makes stale). Read by a
  /// thread without the lock between two equal even loads of the lock's
  /// sequence, as readable_unlocked.
  [[nodiscard]] bool writable_unlocked(const Object& object) const noexcept {
    const Region* primary = object.primary_;
    if (primary == nullptr || memory_mode_[primary->device_] != nullptr) return false;
    // Already dirty: the write neither sets the flag nor needs a new version.
    if (!primary->dirty_ || primary->has_copy_) return false;
    const std::uint64_t version = object.version_;
    for (const Region* r : object.on_device_) {
      if (r == nullptr || r == primary) continue;
      // Already stale and no copy in flight: the write changes nothing any
      // other region's validity rests on.
      const std::uint64_t held = r->version_;
      if (r->has_copy_ || (held != 0 && held == version)) return false;
    }
    return true;
  }
  /// note_access for the n accesses of one call pinned without the runtime
  /// lock (the Runtime's unlocked accesses, once readable_unlocked or
  /// writable_unlocked said yes): counts them in per-thread counters that
  /// stats() adds in, and returns their emulated cost.
  double note_accesses_unlocked(Object* const* objects, const Access* accesses, std::size_t n);

  // ---- walks and checks -----------------------------------------------------
  /// Every live object, in creation order.
  template <typename F>
  void for_each_object(F&& visit) const {
    for (const Object& o : objects_) visit(o);
  }
  /// Every live object, in creation order, to change (visit must not create
  /// or destroy objects).
  template <typename F>
  void for_each_object(F&& visit) {
    for (Object& o : objects_) visit(o);
  }
  /// Every live region of `device`, in address order.
  void for_each_region(DeviceId device, const std::function<void(Region&)>& visit) const;
  /// Verifies the invariants of docs/design.md that the state shows (1, 2, 4,
  /// 6, and the allocator's own consistency); throws invariant_violation naming
  /// the first one broken. With verify_contents, every secondary that counts
  /// as a valid copy is compared byte for byte with its primary (slow).
  void check_invariants(bool verify_contents = false) const;

  /// The manager's counters as they are now, unlocked reads included.
  [[nodiscard]] Stats stats() const;
  /// How the mover makes copyto_async's copies (its threads: the replay's
  /// copy lanes, plan/schedule/copy_timeline.hpp).
  [[nodiscard]] const MoverOptions& mover_options() const noexcept { return mover_.options(); }
  /// Copies issued until the matching release_mover_wakes() wake no mover
  /// thread; the release wakes them (Mover::hold_wakes). For a caller that
  /// issues copies under a lock it lets go of next: a woken mover thread
  /// would take the core of the thread still holding it. A copy settled
  /// meanwhile is taken over by the settling thread, as ever.
  void hold_mover_wakes() { mover_.hold_wakes(); }
  /// Ends a hold_mover_wakes(); the last one open wakes the mover for the
  /// copies issued meanwhile.
  void release_mover_wakes() noexcept { mover_.release_wakes(); }
  /// Records the mechanism's events into `trace` (null: stop recording).
  void set_trace(Trace* trace) noexcept { trace_ = trace; }
  /// The trace being recorded into, or null.
  [[nodiscard]] Trace* trace() const noexcept { return trace_; }
  /// The policy's own counters live beside the manager's, so one snapshot
  /// holds both; policies (and policy/moves.cpp) add to them.
  [[nodiscard]] PolicyCounters& policy_counters() noexcept { return stats_.policy; }

  /// True when [start, start + bytes) of `device` holds the primary of a
  /// pinned object: evictfrom over that range would throw pinned_error.
  [[nodiscard]] bool pinned_in_range(DeviceId device, std::uint64_t start, std::uint64_t bytes) const;

 private:
  detail::Heap<Region>& heap(DeviceId device) const;
  void check_device(DeviceId device, const char* operation) const;
  void check_region(const Region& region, const char* operation) const;
  // Makes `region` the new region that `block` of `device` holds, and
  // counts the allocation.
  Region* adopt(DeviceId device, Region& region, detail::Block<Region>& block, std::uint64_t bytes);
  // try_allocate_at without the test-only injected failure (allocate_at
  // must not report an injected one as an occupied range).
  Region* place_at(DeviceId device, std::uint64_t offset, std::uint64_t bytes);
  // defrag and make_hole may move `region` within its heap: anything but
  // the primary of a pinned object (invariant 3).
  static bool movable_in_heap(const Region& region) noexcept;
  // A copy failed part way (fault_injection.hpp): leaves dst as a media
  // error would and throws copy_error.
  [[noreturn]] void fail_copy(Region& dst, const Region& src, bool into_primary, detail::CopyDestination where);
  // What allocate_at throws for: the live regions in the range, or the
  // evictfrom holding it.
  std::string occupants(DeviceId device, std::uint64_t offset, std::uint64_t bytes) const;
  void release_region(Region& region);
  void detach(Region& region);
  const Region* pinned_primary_in(DeviceId device, std::uint64_t start, std::uint64_t bytes) const;
  std::string region_name(const Region& region) const;
  // Streams an access through `device`'s memory-mode cache model (if it has
  // one) and returns the extra nanoseconds its misses cost.
  double memory_mode_ns(DeviceId device, std::uint64_t offset, std::uint64_t bytes, Access access);
  Region* new_region();
  void recycle(Region& region) noexcept;
  // Invariant 7: waits for the copy in flight on `region` (if any) and
  // applies its outcome; with rethrow, a failed copy is thrown here. A copy
  // the mover has not started yet is not waited for behind the queue: this
  // thread makes it itself, or, with drop_background and a background copy
  // (whose region the caller is about to free, move or overwrite), drops it.
  void settle(const Region& region, bool rethrow = false, bool drop_background = false);
  void apply(detail::CopyState& copy);
  // Checks shared by copyto and copyto_async; true when dst is a primary.
  bool check_copy(const Region& dst, const Region& src, const char* operation) const;
  detail::CopyDestination destination_kind(const Region& dst) const;

  std::vector<std::unique_ptr<detail::Heap<Region>>> heaps_;
  // Per device: the model of its DRAM cache when it is emulated in 2LM
  // memory mode, else null.
  std::vector<std::unique_ptr<TwoLevelMemory>> memory_mode_;
  // The manager owns every object and region: live objects in creation
  // order; every region ever made (a deque keeps their addresses), live or
  // spare. Spare ones are kept for reuse, linked through Region::next_spare_
  // and taken last in, first out: allocate and free happen on every move,
  // reuse keeps them off the system allocator, and the region freed last is
  // the one still in the cache.
  std::list<Object> objects_;
  std::deque<Region> regions_;
  Region* spare_regions_ = nullptr;
  std::uint64_t next_object_id_ = 1;
  // Content versions are unique across objects, so a copy of one object's
  // data can never pass for a valid copy of another's.
  std::uint64_t next_version_ = 1;
  Stats stats_;
  // What note_accesses_unlocked counts, per thread: accesses, emulated ns,
  // then bytes read per device, then bytes written per device.
  enum UnlockedField : std::size_t {
    unlocked_accesses,
    unlocked_emulated_ns,
    unlocked_bytes_read,
    unlocked_bytes_written = unlocked_bytes_read + max_devices
  };
  ThreadStripes<unlocked_bytes_written + max_devices> unlocked_accesses_;
  Trace* trace_ = nullptr;
  // Asynchronous copies issued and not yet applied, oldest first.
  std::vector<std::shared_ptr<detail::CopyState>> copies_in_flight_;
  // Last: its destructor finishes the queued copies while the regions and
  // heaps they touch still exist.
  Mover mover_;
  void trace(TraceKind kind, DeviceId device, std::uint64_t bytes, const Object* object, DeviceId device2 = 0,
             std::uint8_t detail = 0);
  void trace(TraceKind kind, DeviceId device, std::uint64_t bytes, std::uint64_t object_id, DeviceId device2 = 0,
             std::uint8_t detail = 0);
};

}  // namespace cachedarrays

#ifdef CACHEDARRAYS_HEADER_ONLY
#include "cachedarrays/manager/data_manager-inl.hpp"
#include "cachedarrays/manager/data_manager_async-inl.hpp"
#endif
