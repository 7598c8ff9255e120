// ReDL's data management (ReDL, Rang et al., "Scalable Data Management
// on Hybrid Memory System for Deep Neural Network Applications", §III): a
// reference-distance and location based placement of one iteration's
// objects across the fast tier (DRAM) and the slow one (PMM). Short-lived
// objects are held in a fast region reserved at the start of each migration
// period (Idle migration, §III-C, Algorithm 1); long-lived ones live in the
// slow tier and are migrated in, one layer-based period ahead, for the
// period that uses them (Dynamic migration, §III-D, Fig. 6, Algorithm 2);
// a kernel whose object has not arrived reads it in place from the slow tier
// (DSMA, §III-D.2, Fig. 7). A pure algorithm over a program: the plan is
// also given as an MovePlan, which AutoTM's executor
// (policy/autotm_policy.hpp) runs.
//
// The model:
//   - Layers (§II-B, §III-D): `kernels_per_layer` consecutive kernels, or the
//     layers `layer_starts` names. Liveness (§II-B) of an object: the layers
//     from its first to its last use, both counted; short-lived: at most
//     `short_lived_layers` (the paper's one) and not outliving the iteration
//     (a persistent object that is not retired is alive for "more than one
//     forward and backward pass", Fig. 2's ">64"); long-lived: the rest.
//   - Periods (§III-D.1): the iteration's layers cut into periods of
//     `period_layers` layers from the first (the last may be shorter).
//   - Kernel k runs costs.fast_seconds[k] plus slow_penalty[k][a] for each
//     argument a in the slow tier during k. Copies go on the executor's copy
//     channels (copy_channels.hpp: the mover's threads as lanes,
//     TierCosts::copy_lanes), in the order issued: PMM -> DRAM at
//     to_fast_gbps, DRAM -> PMM at to_slow_gbps, a synchronous write-back on
//     the compute thread beside the mover's copies; a copy out is free when the
//     slow copy is still valid (the runtime keeps it linked after a copy in:
//     nothing written since). The iteration repeats: the plan is the steady
//     state, and the engine and the copies issued at the end of one
//     iteration carry into the next.
//   - DRAM occupancy at kernel k: the objects held in DRAM during k — created
//     there and not yet retired, or moved in (their destination is held from
//     the kernel the copy is issued at, arrived or not) and not yet written
//     back (a copy out frees after the kernel it is issued at). It never
//     passes `fast_limit`.
//   - The kernel after an asynchronous copy out waits until it lands. AutoTM's
//     executor no longer does (AutotmPolicy::settle lets a write-back run on
//     until its DRAM is needed), but this conservative rule plans better:
//     with the executor's rule instead (a kernel waits for write-backs only
//     when the occupancy at it and the bytes still landing would pass its
//     limit), the replayed steady state is slower on most of the bundled
//     networks. With no wait for write-backs at all (a replay that does not
//     hold a write-back's DRAM until it lands charges them so), the model
//     tracks such a replay closely, but its plans replay no better overall
//     than this rule's: better on some networks, worse on others.
//
// The algorithm:
//   1. Idle migration (§III-C, Algorithm 1): short-lived objects are
//      created in the fast region and never move. Where those alive at a
//      kernel pass the limit, victims are taken by shortest liveness
//      (§III-C.1: "short-lived data objects with shorter liveness are
//      chosen"), then the largest, and live in the slow tier. Long-lived
//      objects under `min_bytes` (not worth a copy: §II-B's small objects)
//      are then held there too, by first use, each where it fits for its
//      whole life, else in the slow tier. The
//      region of period t (AllocFastMem, F(I) of §III-D.1) is the peak of
//      their bytes over its kernels; they have the fast tier first ("ReDL
//      guarantees that there is always enough space for short-lived data
//      objects"), and long-lived objects may use what the region leaves
//      free at each kernel ("reserved for short-lived and some newly
//      migrated long-lived data objects").
//   2. Dynamic migration (§III-D, Fig. 6), period by period: during period
//      t-1 the long-lived objects period t uses are brought in, each by an
//      asynchronous copy issued at the earliest kernel from the start of
//      t-1 (after its last use before t) from which its DRAM is free
//      through the end of t, in the order of their first use in t (from
//      the start of t - issue_periods instead when RedlOptions asks: the
//      paper's one period is not always enough for a copy to land); objects
//      created in t are created in DRAM when they fit. Objects already in
//      DRAM stay while they fit. Under tension (a needed object does not
//      fit), long-lived objects not used in the period are written back,
//      farthest next use first, just after their last use (from the start
//      of t-1); a needed object that still does not fit stays in the slow
//      tier for period t.
//   3. DSMA (§III-D.2): a kernel that reads an object whose copy in has not
//      arrived when the kernel starts reads it in place (in_fast = false,
//      its slow_penalty charged); the copy goes on and later uses find it.
//   4. The period size (§III-D.1): given, or searched as the paper's
//      iterated greedy does: the median of the layers first, then each
//      round tries the median + r and - r (r = 1, 2, ...), three trials a
//      round, the objective being this model's iteration time; the search
//      stops at a size that meets both constraints — (4), everything a
//      period needs fits, and (5), it arrives in time: nothing is read from
//      the slow tier and no kernel waits, i.e. the all-DRAM time — or when
//      every size has been tried (or after `search_rounds` rounds), and the
//      best size tried is taken. The rounds are not cut short by default:
//      the modeled time is far from convex in the period size (the best
//      size near the median can model far slower than the best of all,
//      which may be a period of one layer).
//      RedlPlan::search keeps every size tried with its modeled time: the
//      policy (policy/redl_policy.hpp) has the best 16 judged by a replay
//      on the executor when it is given a judge, since this model ranks
//      them differently from the executor, then the 3 judged fastest
//      with their copies in issued further ahead (issue_periods), then the
//      3 plans judged fastest with objects of a few layers held as
//      short-lived (short_lived_layers); all of it again with the room of a
//      tight period given by slow-tier cost (room_by_slow_cost).
//
// Where the paper leaves a choice open, this file's reading:
//   - Liveness is counted between uses, not from allocation to free (§II-B
//     "alive after it is allocated"): a program may create an object long
//     before its first use, and what a placement needs is where it is used.
//   - Algorithm 1's victims are chosen ahead, over the whole program (the
//     program is known): a victim is never in the fast tier rather than
//     freed from it mid-life, which would take a copy out that §III-C.1
//     says short-lived objects must not cost.
//   - Write-backs: the paper writes back "long-lived ones that are not
//     accessed in the current period"; here, from the start of period t-1,
//     right after the object's last use (which may lie in t-1), so that a
//     write-back never overlaps a use. When the last use ends period t-1 and
//     the next kernel is not free to host the copy, the copy out is
//     synchronous after that use.
//   - Which of a period's objects get the room when not all fit: Fig. 6
//     migrates what the period needs without an order, and "most requested"
//     first; here by first use in the period, or (room_by_slow_cost) by what
//     their slow-tier accesses cost per byte, from the profiles of §III-B,
//     which time each kernel with its tensors in either memory.
//   - A kernel that writes an object whose copy in has not arrived waits
//     for it instead of DSMA: our runtime's write pin waits for a copy in
//     flight out of the region it writes (data_manager.hpp copyto_async),
//     and the copy would then be stale.
//   - Persistent objects wrap around: those in DRAM at the end of the
//     iteration are in DRAM at its start; period T-1 brings in (for the
//     next iteration's period 0) exactly the set that is in DRAM at the
//     start, and writes back the others, which a fixed point finds (from
//     "all persistent long-lived objects", shrinking). Persistent objects
//     retired in the iteration start in the slow tier, as AutoTM's replay
//     has them.
//   - The Profile Cache and the ILP of §III-B (a static placement for the
//     kernels' inputs and outputs) are not here: TierCosts is the profile,
//     and AutoTM's static formulation is that ILP.
#pragma once

#include "cachedarrays/config.hpp"

#include <cstdint>
#include <string>
#include <vector>

#include "cachedarrays/plan/program/program.hpp"
#include "cachedarrays/plan/schedule/autotm.hpp"

namespace cachedarrays::plan {

/// What redl_plan plans for: the fast tier's limit, the layers and periods,
/// and the choices the paper leaves open.
struct RedlOptions {
  std::uint64_t fast_limit = 0;  ///< bytes of the fast tier the plan may hold at once; > 0
  /// By kernel, a lower limit during that kernel (empty, or shorter than the
  /// program: fast_limit for the rest). A heap that fragments where the plan
  /// is fullest is fitted by lowering the limit there only
  /// (policy::fit_to_heap_by_kernel), not everywhere.
  std::vector<std::uint64_t> kernel_limits;
  std::uint32_t period_layers = 0;      ///< layers per migration period; 0: search (§III-D.1)
  std::uint32_t kernels_per_layer = 1;  ///< a layer: this many consecutive kernels; >= 1
  /// The first kernel of each layer, ascending from 0 (takes the place of
  /// kernels_per_layer when not empty).
  std::vector<std::uint32_t> layer_starts;
  std::uint32_t short_lived_layers = 1;  ///< §II-B: "no longer than one layer"; >= 1
  /// A copy in for period t may be issued from the start of period
  /// t - issue_periods (the paper's, 1: during period t-1), where the DRAM
  /// it needs is free that long; >= 1.
  std::uint32_t issue_periods = 1;
  /// Where a period's objects do not all fit, which get the room: false,
  /// the paper's order of first use in the period; true, the costliest in
  /// the slow tier per byte first (by the costs' slow_penalty), so that what
  /// stays there is what the kernels read cheapest from it.
  bool room_by_slow_cost = false;
  /// Long-lived objects under this are not migrated but held like short-lived
  /// ones (§II-B's small objects are under 4 KB).
  std::uint64_t min_bytes = 4096;
  /// Rounds of the period search after the median (each tries median +- r);
  /// 0: the paper's, until a size meets both constraints or every size has
  /// been tried (on a program of thousands of layers, thousands of trials).
  std::uint32_t search_rounds = 0;
  /// The fast heap's alignment, for the best-fit replay (autotm_dram_extents)
  /// that tells whether the plan fragments; 0: no replay.
  std::uint64_t alignment = 64;
};

/// An object's liveness (§II-B). Kernels and layers are of the first and
/// last use; `layers` is 0 for an object the iteration does not use.
struct RedlLiveness {
  std::uint32_t first_use = 0,    ///< the first kernel that uses it
      last_use = 0;               ///< the last kernel that uses it
  std::uint32_t first_layer = 0,  ///< the layer of first_use
      last_layer = 0;             ///< the layer of last_use
  std::uint32_t layers = 0;       ///< last_layer - first_layer + 1
  std::uint32_t kernels = 0;      ///< last_use - first_use + 1
  bool survives = false;          ///< persistent and not retired: alive into the next iteration
  bool short_lived = false;       ///< at most short_lived_layers layers and not surviving
};

/// The layer of each kernel. Throws invalid_argument for a kernels_per_layer
/// of 0 or layer_starts that do not start at 0, ascend or stay below the
/// kernel count.
[[nodiscard]] std::vector<std::uint32_t> redl_layers(const Program& program, const RedlOptions& options);
/// Each object's liveness; throws as redl_layers does.
[[nodiscard]] std::vector<RedlLiveness> redl_liveness(const Program& program, const RedlOptions& options);

/// A copy of the plan, with where it falls on the modeled copy engine in the
/// steady state (seconds from the iteration's start). `kernel` and the
/// direction mean what TierMove's do: an asynchronous copy in or out is
/// issued when `kernel` starts; a synchronous copy out follows `kernel`.
struct RedlMove {
  std::uint32_t object = 0;  ///< the program's object number
  std::uint32_t kernel = 0;  ///< the kernel it is issued at (see above)
  bool to_fast = true;       ///< a copy in (else a copy out)
  bool asynchronous = true;  ///< beside `kernel` (else a synchronous copy out after it)
  std::uint64_t bytes = 0;   ///< 0: a copy out of a clean object, which only frees DRAM
  double issue = 0,          ///< when it is issued
      start = 0,             ///< when the engine starts it
      end = 0;               ///< when it lands
  /// A copy in: the use it serves (the object's next use after `kernel`;
  /// in the next iteration when `wraps`).
  std::uint32_t use = 0;
  bool wraps = false;  ///< the use it serves is in the next iteration
};

/// One migration period of the plan.
struct RedlPeriod {
  std::uint32_t first_kernel = 0,  ///< its first kernel
      end_kernel = 0;              ///< the kernel after its last: it spans [first_kernel, end_kernel)
  std::uint64_t idle_region = 0;   ///< F: the peak bytes of the fast region's short-lived objects
  std::uint32_t moves_in = 0;      ///< copies in issued during the period (for the next one)
  std::uint32_t write_backs = 0;   ///< copies out issued during the period
};

/// One period size the search tried, in the order tried.
struct RedlTrial {
  std::uint32_t period_layers = 0;  ///< the size: layers per period
  double modeled_seconds = 0;       ///< this model's iteration time with it
};

/// ReDL's plan: the periods, where each argument is during each kernel, the
/// copies, and the modeled steady-state iteration.
struct RedlPlan {
  std::uint64_t fast_limit = 0;              ///< RedlOptions::fast_limit
  std::vector<std::uint64_t> kernel_limits;  ///< by kernel: the limit the plan kept to there
  std::uint32_t layers = 0;                  ///< layers in the iteration
  std::uint32_t period_layers = 0;           ///< the period size chosen, in layers
  std::vector<RedlPeriod> periods;           ///< the migration periods, in order
  std::vector<RedlTrial> search;             ///< the sizes tried; one entry when the size was given
  std::vector<RedlLiveness> liveness;        ///< by object
  /// Objects of the fast region Algorithm 1 leaves in the slow tier: its
  /// victims, and long-lived objects under min_bytes that found no room.
  std::vector<std::uint32_t> idle_victims;
  /// By kernel, by argument (as program.kernels()[k].args): in DRAM during k
  /// (MovePlan's x).
  std::vector<std::vector<bool>> in_fast;
  /// By kernel, by argument: the object's copy in has not arrived, and k
  /// reads it from the slow tier (DSMA).
  std::vector<std::vector<bool>> dsma;
  std::uint32_t dsma_arguments = 0;       ///< how many entries of dsma are true
  std::vector<RedlMove> moves;            ///< by kernel, in the order issued
  std::vector<double> kernel_start,       ///< the steady-state iteration, by kernel: its start, after any wait
      kernel_end;                         ///< by kernel: its end
  double modeled_seconds = 0;             ///< the iteration, waits included
  double wait_seconds = 0;                ///< kernels waiting for copies (late writes, copies out)
  double all_fast_seconds = 0;            ///< every argument in DRAM: sum of fast_seconds
  double all_slow_seconds = 0;            ///< every argument in PMM
  std::vector<std::uint64_t> fast_bytes;  ///< DRAM occupancy by kernel (see the model)
  std::uint64_t peak_fast_bytes = 0;      ///< the peak of fast_bytes, <= fast_limit
  /// The best-fit replay's (autotm_dram_extents, with options.alignment)
  /// highest byte allocated; 0 when alignment is 0.
  std::uint64_t fast_extent = 0;
  /// Whether fast_extent is within fast_limit (true, unchecked, when
  /// alignment is 0).
  bool fits = true;
  double seconds = 0;  ///< wall time of the planning
  std::string status;  ///< a summary, for a person
};

/// ReDL's plan for `program` (see the file comment). Throws invalid_argument
/// for options out of range (each message names the value and what is
/// allowed) and costs that do not match the program (one time per kernel,
/// one penalty per argument, each finite and >= 0; copy bandwidths finite
/// and > 0).
[[nodiscard]] RedlPlan redl_plan(const Program& program, const TierCosts& costs, const RedlOptions& options);

/// The plan as AutoTM's executor runs it: in_fast, the moves (asynchronous
/// copies in and out, synchronous copies out), the modeled time, the limit
/// for every kernel and the replay's extent.
[[nodiscard]] MovePlan redl_autotm_plan(const RedlPlan& plan);
/// redl_autotm_plan(redl_plan(program, costs, options)); throws as redl_plan.
[[nodiscard]] MovePlan redl_autotm_plan(const Program& program, const TierCosts& costs, const RedlOptions& options);

}  // namespace cachedarrays::plan

#ifdef CACHEDARRAYS_HEADER_ONLY
#include "cachedarrays/plan/schedule/redl-inl.hpp"
#endif
