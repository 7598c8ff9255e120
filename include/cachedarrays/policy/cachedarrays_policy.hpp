// The CachedArrays policy family (paper IV, "We investigate several
// different optimizations in the policy"): three switches give the modes the
// paper compares.
//   L  local allocation: a new object starts in fast memory when it fits
//      (evicting to make room); without L it starts in slow memory and is
//      copied into fast memory before its first write, like a true cache.
//   M  memory optimisations: retire frees at once; without M retired objects
//      are released only at collect() (a garbage collector that runs at the
//      end of an iteration or under memory pressure), so they may be written
//      back to slow memory when evicted: the waste the paper measures.
//   P  prefetch: will_read copies a slow object into fast memory; without P
//      reads are served where the object is and only will_write moves it.
//   A  asynchronous lookahead (not in the paper; docs/design.md "What is known
//      ahead"): with the program of the iteration (Policy::on_program), at
//      each kernel the objects the next kernels use are copied into fast
//      memory by the mover, behind the kernels, and an archived object is
//      written back in the background so that its later eviction costs no
//      copy. Room for a copy ahead is made only from objects used later than
//      the one copied and already clean in slow memory, so a copy ahead
//      never puts a write-back on the critical path. Write-backs ahead are
//      made only for room the program will ask for: what its live bytes
//      still grow by in the iteration, plus the objects now outside fast
//      memory that may come back; when free bytes cover that, nothing is
//      written back and no fast object is examined, so a program that fits
//      costs no copy. Without a program, or once an iteration departs from
//      it, A does nothing until the next iteration but write archived
//      objects back under pressure.
//   +planner  offset plan (not in the paper): with L and M, the
//      objects an iteration creates go to the fast-heap offsets an offset
//      planner gave them (planned_placement.hpp), so the iteration needs
//      the planned footprint instead of the online allocator's; what the
//      plan cannot place, and every move, is the mode's as without it.
// Modes: "ca" (CA:∅), "ca-l", "ca-lm", "ca-lmp", "ca-lma", "ca-lmpa" (any
// combination parses), each with M and L optionally followed by
// "+best-fit", "+smartpool" or "+mip" ("planned" is ca-lm+best-fit).
// "hw-cache" is docs/design.md's 2LM-like baseline at object granularity: every
// object starts in slow memory, any use fills a fast copy (evicting the
// least recently used, written back only when dirty), archive hints are not
// seen (hardware has none), retire frees at once.
// Moves are the paper's Listing 1 (evict) and Listing 2 (prefetch); victims
// are chosen by true LRU, archived objects first, and cleared with evictfrom
// so that the hole is contiguous; when the free bytes suffice but no hole
// does, the fast heap is defragmented first.
#pragma once

#include "cachedarrays/config.hpp"

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cachedarrays/plan/offsets/offset_planner.hpp"
#include "cachedarrays/policy/deferred_retires.hpp"
#include "cachedarrays/policy/planned_placement.hpp"
#include "cachedarrays/policy/policy.hpp"

namespace cachedarrays::policy {

namespace detail {
class LruList;
class ReuseDistance;
}  // namespace detail

/// The switches of a CachedArrays mode (the paper's L, M and P, and A),
/// and its name; the opening comment of cachedarrays_policy.hpp says what each one does.
struct Mode {
  /// L: a new object starts in fast memory when it fits (evicting to make
  /// room); without L it starts in slow memory.
  bool local_allocation = false;
  /// M: retire frees at once; without M retired objects are released only
  /// at collect().
  bool memory_optimisations = false;
  bool prefetch = false;  ///< P: will_read copies a slow object into fast memory
  /// A: with the program, the objects the next kernels use are copied into
  /// fast memory by the mover, behind the kernels.
  bool async_lookahead = false;
  /// hw-cache: new objects in slow memory, fill on every use, archive
  /// ignored, retire frees at once (L, M and P are set accordingly).
  bool hardware_cache = false;
  /// +planner: objects created in an iteration at planned offsets (needs L and M).
  plan::OffsetPlanner offsets = plan::OffsetPlanner::online;

  /// "ca", "ca-l", "ca-lm", "ca-lmp", "ca-lma", ... (letters in any order, each once),
  /// or "hw-cache"; an L and M mode may end in "+best-fit", "+smartpool" or
  /// "+mip". Throws invalid_argument naming the valid spellings.
  [[nodiscard]] static Mode parse(std::string_view name);
  /// The mode's canonical name, which parse() reads back ("ca-lm", "hw-cache", ...).
  [[nodiscard]] std::string name() const;

  /// @name Named changes
  /// This mode with one switch set (or cleared with `false`), so that a mode
  /// reads as its letters: `mode::LM.with_async_lookahead()` is CA:LMA.
  ///@{

  /// With L set (or cleared).
  [[nodiscard]] constexpr Mode with_local_allocation(bool on = true) const {
    Mode m = *this;
    m.local_allocation = on;
    return m;
  }
  /// With M set (or cleared).
  [[nodiscard]] constexpr Mode with_memory_optimisations(bool on = true) const {
    Mode m = *this;
    m.memory_optimisations = on;
    return m;
  }
  /// With P set (or cleared).
  [[nodiscard]] constexpr Mode with_prefetch(bool on = true) const {
    Mode m = *this;
    m.prefetch = on;
    return m;
  }
  /// With A set (or cleared).
  [[nodiscard]] constexpr Mode with_async_lookahead(bool on = true) const {
    Mode m = *this;
    m.async_lookahead = on;
    return m;
  }
  /// +planner: new objects at `planner`'s offsets (online: none).
  [[nodiscard]] constexpr Mode with_offsets(plan::OffsetPlanner planner) const {
    Mode m = *this;
    m.offsets = planner;
    return m;
  }
  ///@}

  /// Field-wise equality: the same switches and the same offset planner.
  friend constexpr bool operator==(const Mode&, const Mode&) = default;
};

/// The modes with names of their own, spelt by their fields.
namespace mode {
inline constexpr Mode none{};                              ///< CA:∅, "ca": no switch set
inline constexpr Mode L{.local_allocation = true};         ///< CA:L, "ca-l"
inline constexpr Mode LM = L.with_memory_optimisations();  ///< CA:LM, "ca-lm" (the default)
inline constexpr Mode LMP = LM.with_prefetch();            ///< CA:LMP, "ca-lmp"
inline constexpr Mode LMA = LM.with_async_lookahead();     ///< "ca-lma": LM with asynchronous lookahead
inline constexpr Mode LMPA = LMP.with_async_lookahead();   ///< "ca-lmpa": LMP with asynchronous lookahead
/// "hw-cache": the 2LM-like baseline (M and P as a hardware cache behaves).
inline constexpr Mode hw_cache{.memory_optimisations = true, .prefetch = true, .hardware_cache = true};
}  // namespace mode

/// How far the A modes look ahead: up to `kernels` kernels, and no more than
/// `fast_fraction` of the fast device in copies ahead at once.
struct Lookahead {
  std::uint32_t kernels = 32;   ///< kernels after the current one whose objects may be copied ahead
  double fast_fraction = 0.25;  ///< share of the fast device that copies ahead may hold at once
  /// Whether a kernel whose clean reserve provably holds skips the walk
  /// over fast objects that would confirm it (the same decisions, less
  /// work; off only to compare against the walk at every kernel).
  bool bound_reserve_walks = true;
};

/// Whether a mode without lookahead (hw-cache excepted) declines to copy in
/// an object whose reuses pass the fast tier, serving it where it lies
/// (docs/design.md "Streams served in place").
enum class StreamBypass {
  predicted,  ///< declined when the object's reuse distances predict a stream (the default)
  never       ///< every move the hints ask for is made: for a plan's executor, whose plan decides
};

/// The CachedArrays policy family (paper IV): a Mode's switches on one
/// mechanism of true-LRU eviction (Listing 1) and prefetch (Listing 2)
/// between the fast device and the slow one.
class CachedArraysPolicy final : public Policy {
 public:
  /// A policy of mode `mode`, looking ahead as `lookahead` says in the A
  /// modes, serving streams in place as `bypass` says in the others. Throws invalid_argument for an offset plan without
  /// L and M, or a Lookahead::fast_fraction outside (0, 1].
  explicit CachedArraysPolicy(Mode mode = mode::LM, Lookahead lookahead = {},
                              StreamBypass bypass = StreamBypass::predicted);
  ~CachedArraysPolicy() override;  // out of line: LruList is incomplete here

  /// The mode's name (Mode::name).
  [[nodiscard]] std::string name() const override { return mode_.name(); }
  /// Only the A modes look ahead from the program position.
  [[nodiscard]] bool follows_kernels() const override { return mode_.async_lookahead; }
  /// Deferred for an object in fast memory (a will_read only marks it
  /// recently used); unneeded for one in slow memory unless the mode
  /// prefetches (P), whose will_read moves it and must come at once.
  [[nodiscard]] HintDelivery read_hint_delivery(const Object& object) const override;
  /// Deferred in fast memory (a write there only marks recency); under the
  /// lock elsewhere, where will_write brings the object in.
  [[nodiscard]] HintDelivery write_hint_delivery(const Object& object) const override;
  /// The mode this policy runs.
  [[nodiscard]] const Mode& mode() const noexcept { return mode_; }
  /// The offset plan being followed (+planner modes), else null.
  [[nodiscard]] const PlannedPlacement* planned_placement() const noexcept { return planned_.get(); }
  /// Fast is device 0, slow the last device; at least two are needed.
  void attach(DataManager& manager) override;
  [[nodiscard]] bool place(Object& object) override;
  /// Gives the object its LRU entry (most recently used when it is in fast
  /// memory) and, when streams are served in place, a reuse distance that
  /// starts with its next touch.
  void adopt(Object& object) override;
  void will_use(Object& object) override;
  void will_read(Object& object) override;
  void will_write(Object& object) override;
  void archive(Object& object) override;
  void retire(Object& object) override;
  void collect() override;
  void on_program(std::shared_ptr<const plan::Program> program) override;
  void on_iteration_begin(std::uint64_t iteration) override;
  /// No lookahead along the program: the iteration is not its.
  void on_unplanned_iteration_begin(std::uint64_t iteration) override;
  void on_kernel_begin(const KernelPoint& kernel) override;

  // ---- for policies that execute a plan on this mechanism ----------------
  // (AutotmPolicy): the moves a plan prescribes, made with Listings 1 and 2
  // and kept in this policy's LRU, so that where the plan cannot be
  // followed the mode's own decisions take over from a consistent state.

  /// A new object in slow memory (fast memory when slow is full); false
  /// when neither has room.
  [[nodiscard]] bool place_in_slow(Object& object);
  /// Listing 1: the object's primary to slow memory, written back only when
  /// its slow copy is not valid. False when it is not in fast memory, is
  /// pinned, or slow memory has no room.
  bool move_to_slow(Object& object);
  /// Starts copying a slow object into a free hole of fast memory on the
  /// mover (nothing is evicted for it); its next will_use / will_write makes
  /// the copy its primary. False when there is no hole, or it is in fast
  /// memory or on its way already.
  bool copy_to_fast_async(Object& object);
  /// Starts writing a fast object's contents to slow memory on the mover,
  /// when its slow copy is not valid, so that a later move_to_slow copies
  /// nothing.
  void write_back_async(Object& object) { write_back_ahead(object); }

  /// Fast objects the A modes' lookahead has examined for room (each one a
  /// look at its next use) since the policy was made: zero while free bytes
  /// cover what the program will ask for.
  [[nodiscard]] std::uint64_t objects_examined() const noexcept { return examined_; }
  /// Kernels whose clean reserve was shown to hold without a walk over fast
  /// objects (Lookahead::bound_reserve_walks).
  [[nodiscard]] std::uint64_t reserve_walks_skipped() const noexcept { return reserve_walks_skipped_; }
  /// Kernels whose clean reserve was checked by a walk over fast objects.
  [[nodiscard]] std::uint64_t reserve_walks() const noexcept { return reserve_walks_; }

 private:
  // ---- A: asynchronous lookahead -------------------------------------------
  void bind(std::uint32_t program_object, Object& object);
  void unbind(Object& object);
  // Kernels after `current` whose objects should start moving now.
  void look_ahead(std::int64_t current);
  // Kernels until `object` is used again after kernel `current` (-1: from
  // the start of the iteration; the next iteration's first use for a
  // persistent object; "never" for the rest).
  [[nodiscard]] std::uint64_t distance_to_use(const Object& object, std::int64_t current) const;
  bool prefetch_ahead(Object& object, std::int64_t current, std::int64_t target);
  // Frees a hole of `bytes` in fast memory by evicting only objects used
  // after kernel `target` whose slow copy is valid (no copy), farthest next
  // use first; starts background write-backs of dirty ones that would have
  // qualified, so that they are clean by a later call.
  bool make_room_clean(std::uint64_t bytes, std::int64_t current, std::int64_t target);
  // True when the object's slow copy is valid or on its way afterwards.
  bool write_back_ahead(Object& object);
  // Starts background write-backs of dirty objects used after the window
  // until free plus clean-and-far bytes reach the lookahead's budget, or
  // the room still needed (room_needed) when that is less.
  void keep_clean_reserve(std::int64_t current);
  // Bytes fast memory may yet have to take after kernel `current`: how far
  // the program's live bytes grow above their level at `current` later in
  // the iteration, plus the bytes of this policy's objects outside fast
  // memory (they may be used again).
  [[nodiscard]] std::uint64_t room_needed(std::int64_t current) const;
  // A lower bound of the clean-and-far bytes (as keep_clean_reserve counts
  // them) at kernel `current`, from its last walk; 0 when there is none.
  [[nodiscard]] std::uint64_t far_ready_at_least(std::int64_t current) const;
  // Unpinned fast objects next used more than `beyond` kernels after
  // `current`, by the state of their slow copy, unordered (callers sort
  // what they use: often the clean ones alone answer).
  struct FarObjects {
    std::vector<std::pair<std::uint64_t, Object*>> clean;  // valid slow copy: leave without a copy
    std::vector<std::pair<std::uint64_t, Object*>> dirty;  // would need a write-back
    std::uint64_t writing_bytes = 0;                       // their write-back in flight
  };
  [[nodiscard]] FarObjects far_fast_objects(std::int64_t current, std::uint64_t beyond);

  // ---- streams served in place (modes without A, hw-cache excepted) -------
  // The modes that follow kernels know the program's reuse; a hardware
  // cache model must fill on every use.
  [[nodiscard]] bool serves_streams_in_place() const noexcept {
    return bypass_ == StreamBypass::predicted && !mode_.async_lookahead && !mode_.hardware_cache;
  }
  // A hint the policy hears of is an access (a read, or a write): the
  // object's reuse distance.
  void note_access(Object& object, Access access);
  // Whether the object's reuses pass the fast tier (see the definition).
  [[nodiscard]] bool streams_past_fast(const Object& object) const;

  bool bring_to_fast(Object& object);
  bool make_room(std::uint64_t bytes);
  bool evict_for_room(Region& region);
  Region* allocate_slow(std::uint64_t bytes);
  void forget(Object& object);
  void touch_if_fast(Object& object);

  Mode mode_;
  StreamBypass bypass_;
  DeviceId fast_ = 0;
  DeviceId slow_ = 1;
  std::unique_ptr<detail::LruList> lru_;
  DeferredRetires retired_;  // waiting for collect() (no-M)
  Lookahead lookahead_;
  std::shared_ptr<const plan::Program> program_;
  std::vector<Object*> bound_;     // by program object: the object it is now (A)
  bool following_ = false;         // this iteration has matched the program so far
  std::int64_t last_kernel_ = -1;  // the kernel begun last in this iteration
  // By kernel + 1 (0: before the first kernel): bytes of the program's
  // objects alive then, each rounded up to a heap block; and the largest of
  // those from that kernel to the end of the iteration.
  std::vector<std::uint64_t> live_at_;
  std::vector<std::uint64_t> peak_from_;
  std::uint64_t placed_bytes_ = 0;  // bytes of the objects this policy holds, in either tier
  std::uint64_t examined_ = 0;      // objects_examined()
  // By kernel k: the bytes of the arguments of kernels 0 .. k-1 (size
  // kernels + 1), bounding what can stop being far between two kernels.
  std::vector<std::uint64_t> arg_bytes_before_;
  // keep_clean_reserve's last walk in this iteration (epoch), at `kernel`:
  // the clean and written-back far bytes it found or started.
  struct ReserveWalk {
    std::uint64_t epoch = 0;
    std::int64_t kernel = -1;
    std::uint64_t far_ready = 0;
  };
  ReserveWalk last_reserve_walk_;
  std::uint64_t reserve_walks_ = 0;          // reserve_walks()
  std::uint64_t reserve_walks_skipped_ = 0;  // reserve_walks_skipped()
  // Numbers the iterations (and programs) for the next uses cached in the
  // LRU entries: a number no cache holds invalidates them all at once.
  std::uint64_t epoch_ = 1;
  std::unique_ptr<PlannedPlacement> planned_;  // +planner modes
  // Reuse distances of the objects (serves_streams_in_place), shared with
  // their entries, which may outlive the policy.
  std::shared_ptr<detail::ReuseDistance> reuse_;
};

}  // namespace cachedarrays::policy

#ifdef CACHEDARRAYS_HEADER_ONLY
#include "cachedarrays/policy/cachedarrays_policy-inl.hpp"
#endif
