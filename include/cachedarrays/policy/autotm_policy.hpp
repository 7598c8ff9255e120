// AutoTM as a policy (AutoTM §3 and §4.3): the iteration's
// program is planned once by AutoTM's ILP (plan/schedule/autotm.hpp) and the plan is
// executed through the data manager at kernel boundaries. The executor
// follows any plan of that form: AutoSwap's (policy/autoswap_policy.hpp)
// and ReDL's planners hand it theirs through AutotmPolicyOptions::planner.
//   autotm-static  every object lives where the plan puts it (§3, Fig. 6a);
//   autotm-sync    objects move just before a kernel that wants them in
//                  DRAM and just after one that leaves them in PMM, on the
//                  program's thread (§3, Fig. 6b; §4.3's move nodes);
//   autotm-async   the synchronous moves, and moves that overlap a kernel
//                  the object is not an argument of, made by the mover
//                  (§7.1).
//
// Execution, in the runtime's hooks:
//   - a new object is the program's next created one (the first of the next
//     16 of its size): created in DRAM when the plan has it there at its
//     first use, else in PMM; an object the program does not know goes to PMM
//     (the plan's DRAM is spoken for);
//   - before a kernel each argument is hinted: the plan's x(t,k) says DRAM
//     (brought in if it is not, Listing 2) or PMM (sent out if it is, Listing
//     1; in a steady iteration it already is);
//   - moves out after a kernel are made at the next hook once the kernel's
//     pins are gone; asynchronous moves start when the kernel they overlap
//     begins (into a free hole of DRAM; a move in with no hole waits for the
//     synchronous move before its use);
//   - an asynchronous move out lets its write-back run on: the object keeps
//     its DRAM, unwaited for, until the copy has landed, or until DRAM must
//     take something new that would pass the plan's limit or find no hole
//     (then the write-backs are waited for, make_room_for);
//   - archive hints are the plan's business and are not followed.
// DRAM is CA:LM's (cachedarrays_policy.hpp): objects are placed and moved
// by its primitives and kept in its LRU. Where the plan cannot be followed —
// no hole for an object the plan puts in DRAM (fragmentation the §4.2 loop
// did not foresee), or a run that departs from the program (a kernel with
// another name, arguments or sizes: a different batch shape) — CA:LM's own
// decisions take over, for the allocation or for the rest of the iteration,
// with a warning on the log the first time (not for a run's first
// iteration, which often differs: see Runtime::record_program). Every move is Listing 1 or 2, so
// a departure costs time, never data: results are bit-identical to any
// other policy's. A new program (Runtime::set_program, record_program) is
// planned again.
#pragma once

#include "cachedarrays/config.hpp"

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "cachedarrays/manager/emulation.hpp"
#include "cachedarrays/plan/program/roofline.hpp"
#include "cachedarrays/plan/schedule/autotm.hpp"
#include "cachedarrays/policy/cachedarrays_policy.hpp"

namespace cachedarrays::policy {

/// The formulation an AutoTM policy name stands for: "autotm-static",
/// "autotm-sync", "autotm-async"; nullopt for any other name.
[[nodiscard]] std::optional<plan::AutotmFormulation> autotm_formulation(std::string_view policy_name) noexcept;

/// The seconds per iteration a candidate plan takes as the executor runs
/// it, for a planner that weighs several (see AutotmPolicyOptions::judge);
/// +infinity for a plan that cannot run.
using PlanJudge = std::function<double(const plan::MovePlan&)>;

/// What a planner other than AutoTM's ILP is given (see
/// AutotmPolicyOptions::planner). Its references live for the call only.
struct PlanRequest {
  const plan::Program& program;                        ///< the iteration's program to plan
  const plan::TierCosts& costs;                        ///< from the time model and the tiers' bandwidths
  std::uint64_t dram_limit = 0;                        ///< bytes of the fast tier the plan may use
  std::uint64_t alignment = 64;                        ///< the fast heap's allocation alignment, in bytes
  const std::function<void(const std::string&)>& log;  ///< progress, one line each
  const PlanJudge* judge = nullptr;                    ///< AutotmPolicyOptions::judge, when set; else null
};

/// Another planner in the ILP's place: the executor follows any plan of
/// AutoTM's form (where each argument is during each kernel, and the moves).
struct PlannerHook {
  std::string name;         ///< the policy's name, e.g. "autoswap:swdoa"
  std::string description;  ///< for the log, e.g. "AutoSwap's swap planner (score SWDOA)"
  std::function<plan::MovePlan(const PlanRequest&)> plan;  ///< makes the plan; called once per program
};

/// A planner that counts bytes against a limit, fitted to the fast heap as
/// AutoTM's fragmentation loop does (AutoTM §4.2, with
/// AutotmOptions::lower_by_overflow): the plan's allocations are replayed on
/// the heap's best-fit allocator (plan::autotm_dram_extents), and while they
/// reach past request.dram_limit the limit is lowered by the overflow (at
/// least 2%) and plan_at called again, at most `max_retries` times. Returns
/// the first plan that fits, or else the one reaching least far, with
/// fast_extent, fits, retries, seconds and a status that says so.
[[nodiscard]] plan::MovePlan fit_to_heap(const PlanRequest& request,
                                         const std::function<plan::MovePlan(std::uint64_t limit)>& plan_at,
                                         std::uint32_t max_retries = 5);
/// The same loop for a planner that takes a limit per kernel (ReDL's
/// RedlOptions::kernel_limits), judged by the plan's offline packing
/// (plan::autotm_dram_offsets) instead of the online replay: only the
/// kernels where the packing reaches past the heap have their limit
/// lowered, each by its own overflow, so a plan that is too tight for the
/// heap where it is fullest keeps the rest of it. fast_extent and fits are
/// the packing's. The status also says at how many kernels, and to how low,
/// the limit went.
[[nodiscard]] plan::MovePlan fit_to_heap_by_kernel(
    const PlanRequest& request,
    const std::function<plan::MovePlan(const std::vector<std::uint64_t>& kernel_limits)>& plan_at,
    std::uint32_t max_retries);

/// The options of an AutotmPolicy: the planner and the machine it plans for.
struct AutotmPolicyOptions {
  /// Formulation, relative gap, time limit, fragmentation loop; dram_limit
  /// and kernel_limits are set by the policy.
  plan::AutotmOptions solver;
  /// Kernel times for the objective (kept; shared so that a model can be
  /// handed over with its profiles). Null: the program's online profiles
  /// (plan::online_time_model) when it has them, else plan::MemoryBound.
  std::shared_ptr<const plan::KernelTimeModel> time_model;
  /// @name Tier bandwidths
  /// The tiers' bandwidths for the time model and the copies; zero: the slow
  /// device's emulation profile (DRAM: its dram_* figures), or with none the
  /// published six-channel DDR4 and six-DIMM Optane figures.
  ///@{
  emulation::Bandwidth fast_tier{};  ///< the fast tier's (DRAM's) read and write bandwidth
  emulation::Bandwidth slow_tier{};  ///< the slow tier's (PMM's) read and write bandwidth
  ///@}
  /// L_DRAM in bytes; 0: the fast device's capacity.
  std::uint64_t dram_limit = 0;
  /// Progress of the solve and warnings, one line each (no newline). Null:
  /// standard error, prefixed "cachedarrays: ".
  std::function<void(const std::string&)> log;
  /// Unset: AutoTM's ILP with `solver` plans. Set: this planner does, and
  /// the policy is named after it (solver is not read).
  std::optional<PlannerHook> planner;
  /// Set: a planner that weighs candidate plans (ReDL's period sizes) keeps
  /// the one this gives the fewest seconds, instead of the one its own model
  /// prefers. Meant for a replay of the program on the executor
  /// (sim/capacity_plan.hpp sets one), which charges what the planners'
  /// models leave out: the heap's fragments, the holes made for them, the
  /// executor's waits. Unset: each planner's own model decides.
  PlanJudge judge;
};

/// AutoTM's executor as a policy (AutoTM): plans the iteration's program
/// once (AutoTM's ILP, or AutotmPolicyOptions::planner) and follows the plan
/// at kernel boundaries, moving objects through CA:LM's primitives; where
/// the plan cannot be followed, CA:LM decides. Results never depend on the
/// plan, only time does.
class AutotmPolicy final : public Policy {
 public:
  /// A policy with `options`. Throws invalid_argument when a tier has one
  /// bandwidth > 0 and the other 0, or one < 0.
  explicit AutotmPolicy(AutotmPolicyOptions options = {});

  /// "autotm-static", "autotm-sync", "autotm-async", or the planner hook's name.
  [[nodiscard]] std::string name() const override;
  /// Fast is device 0, slow the last device (at least two are needed); a tier
  /// bandwidth left zero in the options is taken from the devices here, and a
  /// program given before is planned.
  void attach(DataManager& manager) override;
  /// While the plan is followed, the program's next created object goes
  /// where the plan has it at its first use (DRAM or PMM), and an object the
  /// program does not know to PMM; before the first iteration, PMM; after a
  /// departure, CA:LM decides.
  [[nodiscard]] bool place(Object& object) override;
  /// CA:LM's entry for the object; the plan binds it to its program object
  /// at its first use as a kernel's argument, as it does an object it placed.
  void adopt(Object& object) override { base_.adopt(object); }
  /// As will_write.
  void will_use(Object& object) override;
  /// While the plan is followed, the object goes where the plan has it during
  /// the next kernel: brought into DRAM (Listing 2) or sent to PMM
  /// (Listing 1); otherwise CA:LM's will_read.
  void will_read(Object& object) override;
  /// As will_read, for an object the kernel writes.
  void will_write(Object& object) override;
  /// Archive hints are the plan's business: followed only (by CA:LM) when
  /// the plan is not.
  void archive(Object& object) override;
  /// Frees the object as CA:LM does, after the pending moves out settle.
  void retire(Object& object) override;
  /// Settles pending moves out, then CA:LM's collect.
  void collect() override;
  /// Plans the program (the solve runs here, with progress on the log).
  /// Throws what plan::autotm_plan throws.
  void on_program(std::shared_ptr<const plan::Program> program) override;
  /// Plans the program again from its online profiles (as on_program does)
  /// when the options give no time model; with one, keeps its plan.
  void on_profiles(std::shared_ptr<const plan::Program> program) override;
  /// Starts following the plan for this iteration (when there is one), and
  /// counts the previous iteration as followed if it was.
  void on_iteration_begin(std::uint64_t iteration) override;
  /// CA:LM places and moves, and it is no departure: the iteration is not
  /// the program's (a test pass).
  void on_unplanned_iteration_begin(std::uint64_t iteration) override;
  /// Checks the kernel against the program (another name, arguments or sizes
  /// is a departure), then starts the plan's asynchronous moves beside it.
  void on_kernel_begin(const KernelPoint& kernel) override;

  /// What the policy did, since it was made.
  struct Counters {
    std::uint64_t plans = 0;  ///< ILP solves (fragmentation retries not counted)
    /// Plans priced by the program's online profiles (plan::online_time_model)
    /// rather than by MemoryBound: made when no time model is given and the
    /// program has profiles.
    std::uint64_t profiled_plans = 0;
    std::uint64_t iterations_followed = 0;   ///< iterations that ran to their end on the plan
    std::uint64_t departures = 0;            ///< iterations that departed from the program
    std::uint64_t unplanned_iterations = 0;  ///< iterations begun as not the program's (CA:LM placed them)
    std::uint64_t unplanned = 0;             ///< objects the plan wanted in DRAM placed by CA:LM (no hole)
    std::uint64_t moves_in = 0;              ///< planned moves into DRAM made (sync and async)
    std::uint64_t moves_out = 0;             ///< planned moves out made
    /// Planned asynchronous moves in put off because their DRAM was still
    /// held by write-backs on the mover, or found no hole (issued at a later
    /// kernel instead).
    std::uint64_t deferred_in = 0;
  };
  /// The counters so far.
  [[nodiscard]] const Counters& counters() const noexcept { return counters_; }
  /// The plan being followed, or null before a program comes.
  [[nodiscard]] const plan::MovePlan* plan() const noexcept { return plan_ ? &*plan_ : nullptr; }
  /// What the plan cost, for a report: the planning seconds, the planner's
  /// modeled iteration over the costs' all-DRAM one ("own model ...x
  /// all-DRAM"), "optimal" or the solver's gap, the fragmentation retries,
  /// and the departures when runs left the program more than once; empty
  /// before a plan.
  [[nodiscard]] std::string plan_summary() const;

 private:
  void log(const std::string& line) const;
  void make_plan();
  // Leaves the plan for the rest of the iteration, warning the first time.
  void depart(const std::string& why);
  // Moves out that wait for their kernel's pins to go, or for their
  // write-back ahead to land: a move out whose asynchronous write-back is
  // still on the mover keeps its DRAM (no wait) until the copy has landed
  // or, `force`, until DRAM must take something new (make_room_for).
  void settle(bool force = false);
  // Before `bytes` go into DRAM: the pending moves out are finished, waiting
  // for their write-backs, when DRAM would otherwise pass the plan's limit
  // or have no hole for them.
  void make_room_for(std::uint64_t bytes);
  // DRAM takes `bytes` more within the plan's limit, in one hole, now.
  [[nodiscard]] bool has_room(std::uint64_t bytes);
  // The object's write-back is on the mover: its DRAM is held until it lands.
  [[nodiscard]] bool writing_back(const Object& object);
  // A pending move out's write-back is still on the mover.
  [[nodiscard]] bool write_back_in_flight();
  // Neither the object nor a copy of it is in DRAM.
  [[nodiscard]] bool needs_copy_in(const Object& object);
  // The planned asynchronous move in of `object` beside a kernel: issued
  // now, or, when it has no room and a write-back on the mover holds DRAM
  // (or moves put off before it wait), or it finds no hole, put off
  // (deferred_in_) rather than waited for or made on the compute thread.
  void move_in_async(std::uint32_t id, Object& object);
  // Appends program object `id`'s move in to the put-off ones (once).
  void put_off(std::uint32_t id);
  // The moves in put off, in the order planned, for as long as they have
  // room now.
  void issue_deferred();
  // The plan wants `object` in DRAM again: a move out still pending (its
  // write-back on the mover) is given up, or it would take the object out
  // after this use began.
  void keep_in_dram(const Object& object);
  [[nodiscard]] std::optional<std::uint32_t> program_object(const Object& object) const;
  void bind(std::uint32_t id, Object& object);
  void unbind(const Object& object);
  // The plan's place for `object` during kernel `k` when it is one of its
  // arguments (binding it to one of k's unbound arguments of its size if it
  // is unknown): true for DRAM.
  [[nodiscard]] std::optional<bool> planned_dram(Object& object, std::uint64_t k);
  void follow_hint(Object& object, bool write);

  AutotmPolicyOptions options_;
  // The plan decides what moves, through base_'s hints: none is declined.
  CachedArraysPolicy base_{mode::LM, {}, StreamBypass::never};
  DeviceId fast_ = 0;
  DeviceId slow_ = 1;
  std::shared_ptr<const plan::Program> program_;
  std::optional<plan::MovePlan> plan_;
  // From the plan, by kernel: moves out after it, and moves overlapping it.
  std::vector<std::vector<std::uint32_t>> out_after_;
  std::vector<std::vector<plan::TierMove>> async_during_;
  std::vector<std::uint32_t> creations_;  // program objects in creation order
  std::vector<bool> created_in_dram_;     // by program object: x at its first use
  // Which object each program object is now, and back (by object id).
  std::vector<Object*> bound_;
  std::unordered_map<std::uint64_t, std::uint32_t> ids_;

  bool in_iteration_ = false;  // the first iteration has begun
  std::uint64_t iteration_ = 0;
  bool following_ = false;
  bool warned_ = false;
  std::uint64_t next_kernel_ = 0;    // kernels begun in this iteration
  std::uint32_t next_creation_ = 0;  // creations_ matched so far
  std::vector<std::uint32_t> pending_out_;
  // Program objects whose planned asynchronous move in waits for DRAM that
  // write-backs still on the mover hold, or for a hole: the copy is issued
  // at a later kernel once there is room (issue_deferred), or the object's use
  // brings it (follow_hint), waiting then if it must. Blocking the compute
  // thread at the move's own kernel instead, for DRAM that nothing needs
  // yet, left gaps between the kernels of an emulated run, most of them
  // before kernels that use neither object.
  std::vector<std::uint32_t> deferred_in_;
  std::uint64_t dram_limit_ = 0;  // the plan's DRAM limit (the fast heap's capacity by default)
  double all_dram_seconds_ = 0;   // the costs' iteration with everything in DRAM (the plan's summary compares)
  Counters counters_;
};

}  // namespace cachedarrays::policy

#ifdef CACHEDARRAYS_HEADER_ONLY
#include "cachedarrays/policy/autotm_policy-inl.hpp"
#endif
