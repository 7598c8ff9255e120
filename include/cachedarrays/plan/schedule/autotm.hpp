// AutoTM's memory optimiser (AutoTM, Hildebrand et al., "AutoTM:
// Automatic Tensor Movement in Heterogeneous Memory Systems using Integer
// Linear Programming", ASPLOS 2020, §3): for every object of a program, where
// it lives during each kernel that uses it (DRAM = the fast tier, PMM = the
// slow one) and when it moves, chosen by an integer linear program that
// minimises the modeled time of the iteration under a DRAM limit per kernel.
// Solved by COIN-OR Cbc.
//
// Formulations (§3, Figure 6):
//   - static: an object is placed once, in DRAM or PMM, and stays there;
//   - synchronous: an object may move between its uses, just before a
//     kernel that uses it (into DRAM) or just after (out to PMM); moves
//     block the program, so their time adds to the objective (2);
//   - asynchronous (§7.1): the synchronous moves, and moves that overlap a
//     kernel the object is not an argument of (the mover copies while it
//     runs); a kernel then takes the longer of its own time and its
//     overlapped moves (7), each move |t| / bandwidth (8). A gap between
//     two uses gets a component (§7.1.2) for each of its first and last
//     async_window kernels: a state s(o,k) (in DRAM after k) and moves
//     in/out during k; during k the object holds s(previous) + in(o,k) of
//     DRAM (a move needs both its source and its destination).
//
// Variables (§3.3), per object o and each kernel k that uses it:
//   x(o,k) = 1 when o is in DRAM during k       (the paper's t^DRAM_{t,k})
//   y(o,k) = 1 when o stays in DRAM after k     (the paper's t^DRAM_{t,k+})
// with y <= x (an object reaches DRAM only just before a use), moves in
// before k when x(o,k) > y(o, previous use), moves out after k when
// x(o,k) > y(o,k). An object's network flow graph (§3.1) is the chain of
// its uses; these variables are its edges.
//
// Kernel time (§3.5): the paper sums over every configuration c of a
// kernel's arguments a one-hot d_{k,c} times its profiled time n_{k,c} (6).
// Our profiles time a kernel all in DRAM and all in PMM, and the time models
// (profiled_time.hpp, roofline.hpp) are additive over the arguments, so
// n_{k,c} = n_{k,DRAM} + sum over the arguments c puts in PMM of
// delta(k, a): the one-hot sum equals the linear form
//   rho_k = n_{k,DRAM} + sum_a delta(k,a) (1 - x(a,k)),
// with no 2^|IO(k)| configurations. delta comes from any KernelTimeModel.
//
// DRAM limit (5): at each kernel k, the arguments in DRAM during k plus the
// other objects alive at k that stayed in DRAM after their last use before k
// (or that an asynchronous move left there, or is moving) fit in L_k.
// Objects the iteration does not create (parameters, momentum) are alive
// throughout and wrap around: before their first use they are where their
// last use left them.
//
// Moves out are paid only when they copy (§3.6, "write-once"): our runtime
// keeps an object's PMM copy linked after a move in, so a move out copies
// only when a use wrote the object in DRAM since its PMM copy was last made
// valid; otherwise it drops the DRAM copy for free.
//
// Fragmentation (§4.2): the ILP counts bytes, a heap holds blocks and
// holes. autotm_plan replays each plan on the fast heap's best-fit
// allocator and lowers the limits L_k of the kernels where it does not fit.
#pragma once

#include "cachedarrays/config.hpp"

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "cachedarrays/plan/program/copy_channels.hpp"
#include "cachedarrays/plan/program/kernel_profile.hpp"
#include "cachedarrays/plan/program/move_plan.hpp"
#include "cachedarrays/plan/program/program.hpp"
#include "cachedarrays/plan/program/roofline.hpp"
#include "cachedarrays/plan/program/tier_costs.hpp"

namespace cachedarrays::plan {

/// Which of AutoTM's formulations (§3, Figure 6; see above) the ILP uses.
enum class AutotmFormulation : std::uint8_t {
  static_placement,  ///< an object is placed once, in DRAM or PMM, and stays there
  synchronous,       ///< objects move just before or after a kernel that uses them, blocking it
  asynchronous       ///< the synchronous moves, and moves beside kernels the object is not an argument of
};
/// The formulation's name: "static", "synchronous" or "asynchronous".
[[nodiscard]] const char* to_string(AutotmFormulation formulation) noexcept;

/// What autotm_plan solves: the formulation, the DRAM limits, the solver's
/// limits and the fragmentation loop.
struct AutotmOptions {
  AutotmFormulation formulation = AutotmFormulation::synchronous;  ///< which ILP
  std::uint64_t dram_limit = 0;                                    ///< L_DRAM, bytes
  /// L_DRAM,k per kernel (§4.2's fragmentation loop lowers some); empty: all
  /// dram_limit.
  std::vector<std::uint64_t> kernel_limits;
  double relative_gap = 0.01;  ///< Cbc stops within this gap of its bound (the paper's)
  /// Seconds of wall time for the whole plan, every solve of the
  /// fragmentation loop (and the
  /// asynchronous formulation's synchronous start) included: each solve may
  /// use half of what is left, the last one all of it. Cbc checks the limit
  /// between its steps (its root LP, which on the largest programs takes
  /// seconds, runs to its end), and its root dives get the time left as
  /// their own limit.
  /// A solve that overran says by how much in the plan's status. Short of
  /// time, the plan is at worst the greedy static one (autotm_plan's MIP
  /// start), never everything in PMM; with no time left for a solve, the
  /// start is returned unsearched. The price of a limit that holds: a capped
  /// search can stop at a plan modeled slower than an uncapped dive finds,
  /// but an uncapped dive can overrun its limit by more than the limit itself.
  double time_limit_seconds = 60;
  /// The write-once saving (§3.6): a move out of an object whose PMM copy is
  /// still valid is free. Off by default: it makes the ILP far harder for Cbc
  /// (many times the solve time) for plans of nearly the same modeled time;
  /// the runtime elides those copies either way.
  bool write_once = false;
  /// Asynchronous formulation: how many kernels after a use (moves out) and
  /// before the next use (moves in) a move may overlap. The paper allows
  /// any kernel of the gap; a window bounds the ILP's size. The asynchronous
  /// ILP starts from the synchronous plan (solved first, with the
  /// fragmentation loop), which it contains: stopped early, it is never
  /// worse.
  std::uint32_t async_window = 4;
  /// The most of the time limit the asynchronous ILP's search is given:
  /// Cbc spends minutes in it without improving the start on the trainer's
  /// programs (bench/paper_reproduction --autotm measures what it finds).
  double async_search_seconds = 10;
  /// The fragmentation loop (§4.2): replay the plan's DRAM allocations and
  /// frees through the heap's allocator (best fit, this alignment); for each
  /// kernel whose allocations reach past dram_limit, lower its limit by
  /// `fragmentation_factor` and solve again, at most `max_retries` times
  /// (the default, 5, is the most the paper needed, section 6.6).
  /// 0 retries: no replay.
  std::uint32_t max_retries = 5;
  double fragmentation_factor = 0.98;  ///< a retry's L_k over the last one's (the paper's)
  /// Lower a kernel's limit by at least its overflow, to
  /// L_k * dram_limit / extent_k when that is below L_k * fragmentation_factor.
  /// The paper's 2% steps suit few, large tensors; with thousands of small
  /// ones the best-fit heap can reach several such steps past the limit,
  /// which five 2% steps never close (the plan then fragments and the
  /// executor finds no hole for many objects), and this closes in fewer.
  /// False: the paper's steps alone.
  bool lower_by_overflow = true;
  std::uint64_t alignment = 64;  ///< the fast heap's (DeviceSpec::alignment)
  /// Progress, one line per step (an ILP built, a solve, a heap replay),
  /// with its time; null: silent.
  std::function<void(const std::string&)> progress;
};

/// The plan, or the best incumbent when Cbc stops at the time limit (status
/// says so, and when the fragmentation loop ran out of retries: the plan is
/// still returned, and the executor defragments). Everything in PMM keeps
/// any limit, so a plan always exists. Throws invalid_argument for costs
/// that do not match the program or options out of range, and error when
/// Cbc fails.
[[nodiscard]] MovePlan autotm_plan(const Program& program, const TierCosts& costs, const AutotmOptions& options);

/// The fragmentation loop's replay (§4.2): the plan's DRAM allocations and
/// frees in program order (objects created into DRAM, moves in, moves out,
/// retirements; persistent objects in DRAM at the start of the iteration
/// where the end of it leaves them), made on the heap's best-fit allocator
/// with `alignment`, over two iterations; per kernel, the highest byte
/// allocated while it runs (the later iteration's). Throws invalid_argument
/// for an alignment that is not a power of two >= 8 or a plan that does not
/// match the program.
[[nodiscard]] std::vector<std::uint64_t> autotm_dram_extents(const Program& program, const MovePlan& plan,
                                                             std::uint64_t alignment);

}  // namespace cachedarrays::plan

#ifdef CACHEDARRAYS_HEADER_ONLY
#include "cachedarrays/plan/schedule/autotm-inl.hpp"
#include "cachedarrays/plan/schedule/autotm_search-inl.hpp"
#endif
