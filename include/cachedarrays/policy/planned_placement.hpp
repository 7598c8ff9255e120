// Objects at planned offsets: where a new object goes in the
// fast heap, decided ahead for a whole iteration by an offset planner
// (plan/offsets/offset_planner.hpp) instead of by the online allocator when it is
// created. Training repeats one iteration, so its sizes and lifetimes are
// known, and a plan packs them into its footprint (best-fit offset lines
// come close to max-live; bench/plan_footprint compares), where the online
// allocator's holes cost more.
//
// What it plans: the objects an iteration creates, numbered in creation
// order, each alive from its creation to its retirement, in a time that
// counts creations and retirements (only their order matters). They go
// above `base`, the extent of the fast heap when the first plan is made
// (parameters and other objects made before the first iteration sit below
// it, packed by the online allocator). An object the iteration creates and
// does not retire (the trainer's input batch, retired by the next
// iteration after it made its own) has two slots, used in alternate
// iterations, each reserved for the whole iteration.
//
// Where the plan comes from: the program (Policy::on_program), from the
// next iteration on; without one, the previous iteration as observed here.
// A new object is the plan's next one when it has its size; when it has
// not, one of the next few (those between did not come this time), or an
// object the plan does not know. That one, and one whose slot is taken,
// goes above the plan (not into a hole of it, which is a later object's
// slot); a slot beyond the fast heap, or no room above the plan, leaves the
// object to the policy's online placement. When an iteration departs
// from the plan (objects added, dropped or resized, a different order of
// creations and retirements: Sekiyama et al. §4.3), the next iteration is planned
// from it, as recorded here — unless it only added objects the plan did not
// know and the iteration before did not add the same (a first iteration
// that makes a buffer lazily, once): those went above the plan. A slot that is not
// free (an object placed online sits there) or beyond the fast heap is a
// miss for that object only: it is placed online. A plan never fails a run;
// it only places.
#pragma once

#include "cachedarrays/config.hpp"

#include <cstdint>
#include <optional>
#include <vector>

#include "cachedarrays/manager/data_manager.hpp"
#include "cachedarrays/plan/offsets/offset_planner.hpp"
#include "cachedarrays/plan/program/program.hpp"

namespace cachedarrays::policy {

/// Objects at planned offsets in the fast heap: where each object an
/// iteration creates goes, decided ahead for the whole iteration by an offset
/// planner; a miss is left to the policy's online placement, so a plan never
/// fails a run. Used by CachedArraysPolicy's +planner modes.
class PlannedPlacement {
 public:
  /// Plans with `planner` (`mip`: the options of plan::OffsetPlanner::mip);
  /// throws invalid_argument for plan::OffsetPlanner::online.
  explicit PlannedPlacement(plan::OffsetPlanner planner, plan::MipOptions mip = {});

  /// What the plans placed, since the object was made.
  struct Counters {
    std::uint64_t planned = 0;     ///< objects placed at their planned offset
    std::uint64_t unplanned = 0;   ///< created when no plan was made yet, or unknown to it (placed online)
    std::uint64_t collisions = 0;  ///< their slot was taken
    std::uint64_t above = 0;       ///< unplanned or slot taken, placed above the plan
    std::uint64_t beyond = 0;      ///< their slot lies beyond the fast heap: placed online
    std::uint64_t plans = 0;       ///< plans made (the first, and one per departure)
  };

  /// The program of an iteration: planned from the next iteration on.
  void set_program(const plan::Program& program);
  /// An iteration begins: plans when a new program came or the last
  /// iteration departed from the plan, then starts recording this one.
  void begin_iteration(const DataManager& manager, DeviceId fast, std::uint64_t iteration);
  /// An iteration that is not the program's (the trainer's test pass,
  /// Runtime::begin_unplanned_iteration) begins: the one before it ends as
  /// at begin_iteration (planned anew if it departed), and until the next
  /// begin_iteration nothing is placed by the plan or recorded: its objects
  /// go online, so that it neither departs from the plan nor becomes it.
  void begin_unplanned_iteration(const DataManager& manager, DeviceId fast, std::uint64_t iteration);
  /// A region at `object`'s planned offset in `fast`, or null: the caller
  /// places it as it would without a plan. Records the creation either way.
  [[nodiscard]] Region* place(DataManager& manager, DeviceId fast, const Object& object);
  /// `object` is retired (called before its regions are freed).
  void retired(const Object& object);

  /// The offset planner the plans are made with.
  [[nodiscard]] plan::OffsetPlanner planner() const noexcept { return planner_; }
  /// The counters so far.
  [[nodiscard]] const Counters& counters() const noexcept { return counters_; }
  /// Whether a plan is being followed.
  [[nodiscard]] bool active() const noexcept { return planned_.has_value(); }
  /// The fast-heap bytes the plan needs: base plus the plan's footprint (0
  /// before the first plan).
  [[nodiscard]] std::uint64_t footprint() const noexcept { return footprint_; }
  /// The planned problem's lower bound (base plus max-live), for reports.
  [[nodiscard]] std::uint64_t lower_bound() const noexcept { return lower_bound_; }

 private:
  // One iteration's creations in order: size, and [start, end) in events
  // (creations and retirements); end 0 while alive.
  using Record = std::vector<plan::DsaBuffer>;
  void make_plan(const Record& record, const DataManager& manager, DeviceId fast);
  // An object the plan has no free slot for, above everything planned and
  // placed; null when the fast heap has no room there.
  Region* above_plan(DataManager& manager, DeviceId fast, std::uint64_t bytes);

  plan::OffsetPlanner planner_;
  plan::MipOptions mip_;
  std::optional<Record> program_;  // from set_program, not planned yet
  std::optional<Record> planned_;  // what the plan was made for
  // Per created object, its slot's offset from base; a second one for an
  // object alive at the iteration's end (odd iterations), else the same.
  std::vector<std::uint64_t> slots_;
  std::vector<std::uint64_t> odd_slots_;
  std::optional<std::uint64_t> base_;
  std::uint64_t footprint_ = 0;
  std::uint64_t lower_bound_ = 0;
  bool odd_ = false;

  // This iteration's record, the previous one's, and per object of this
  // one whether it was matched to a planned object.
  [[nodiscard]] Record matched_only() const;
  Record observed_;
  Record last_observed_;
  std::vector<bool> matched_;
  // This iteration's objects by id (ids grow with each object a manager
  // makes): created_[id - first_id_] is the object's place in observed_,
  // or not_created. No hashing on the allocation path.
  static constexpr std::uint32_t not_created = UINT32_MAX;
  std::uint64_t first_id_ = 0;
  std::vector<std::uint32_t> created_;
  std::uint32_t clock_ = 0;
  bool in_iteration_ = false;
  std::uint32_t cursor_ = 0;  // the first planned object not matched yet in this iteration
  // How many planned objects a creation may skip to find its own.
  static constexpr std::uint32_t resync_window = 16;
  Counters counters_;
};

}  // namespace cachedarrays::policy

#ifdef CACHEDARRAYS_HEADER_ONLY
#include "cachedarrays/policy/planned_placement-inl.hpp"
#endif
